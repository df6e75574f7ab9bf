"""Made-up secrets in the forms they take in agent sessions, and text that holds none.

The values are random-looking but fake, and assembled from pieces so that no
secret scanner mistakes this file for a leak. Shared by tests/test_secret_rules.py
(each must be caught) and tests/invariants/test_secrets.py (the detect-secrets
oracle over all of them).
"""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    name: str
    text: str  # as it would appear in a message, a file or a tool's output
    secret: str  # what must be gone once redacted
    kinds: tuple[str, ...]  # the kinds it may be reported as (the first rule that finds it)


_NPM = "x44s0o2a0qpoastvjt" + "boqbjb33sotxq0fw51"
_PYPI = "wLfKkaVE-tNMO66iv9b4-b8p6k_csDZVefZO9j" + "DOmlpFbYfogYtGEwbEFonsIX0eZ776He"
_SG = "hdz2GXnBo1nKo63sZEqqZ3" + "." + "CYxU_w0A2c-MLpjN_E8A4r" + "-knOh7k_gQvmUZKYiCy6A"
_STRIPE = "TaOaovzMNndr" + "5ObyOdjQ9IS8"
_TWILIO = "76806ffb4e53602b" + "9341537b6d252e21"
_DO = "4456d1b3cd83c6bebd0b626cd16da1cb" + "04d7a5c1c1ce140569d01304a29e4d9d"
_SHOPIFY = "241989ea28c9f033" + "ac8e9680f062d47a"
_AZURE = (
    "0nIbOvV1LUBuzfkJacmIynp//TcaiG1pQ19WEzNuCxwX" + "TjsdAs0lHL2RPYzQF6dcSc400lsEFcwfvHCU+e/qFO=="
)
_TG1 = "AA" + "81VQFL0b0aA3taBrdmzEZJb6hPNOQFEfK"
_TG2 = "AA" + "sGPSpFk-gMFIYtKhSWbBTkPRU2NFoylq2"
_DISCORD = "xqzuB7FAs2KemDVLDhnblmuseX3UNDuw" + "RSY1EM0tSn1W-TsWF23xz3iW0nbF7OT6ixKk"
_SECRET_KEY = "mVR%JhA3nI3E(Pj26F%" + "VJU^O4%lFRbFl4M&TuVlX"

#: the kinds issue 16 names, each in a line where it is met
MUST_CATCH: list[Case] = [
    Case(
        "npm",
        "//registry.npmjs.org/:_authToken=npm_" + _NPM,
        _NPM,
        ("npm-access-token", "secret"),
    ),
    Case("pypi", "password = pypi-" + "AgEIcHlwaS5vcmc" + _PYPI, _PYPI, ("pypi-upload-token",)),
    Case("sendgrid", "SENDGRID_API_KEY=SG." + _SG, _SG, ("sendgrid-api-token",)),
    Case(
        "stripe-test", "stripe.api_key = 'sk_" + "test_" + _STRIPE + "'", _STRIPE, ("stripe-key",)
    ),
    Case("twilio", "twilio api key SK" + _TWILIO + " for sms", _TWILIO, ("twilio-api-key",)),
    Case(
        "digitalocean",
        "DIGITALOCEAN_TOKEN=dop_" + "v1_" + _DO,
        _DO,
        ("digitalocean-pat", "digitalocean-access-token"),
    ),
    Case(
        "shopify", "X-Shopify-Access-Token: shpat_" + _SHOPIFY, _SHOPIFY, ("shopify-access-token",)
    ),
    Case(
        "azure-storage",
        "DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey="
        + _AZURE
        + ";EndpointSuffix=core.windows.net",
        _AZURE[:80],
        ("secret",),
    ),
    Case(
        "telegram",
        "TELEGRAM_BOT_TOKEN=123456789:" + _TG1,
        _TG1,
        ("telegram-bot-token", "telegram-bot-api-token"),
    ),
    Case(
        "telegram-bare",
        "the bot answers as 987654321:" + _TG2 + " now",
        _TG2,
        ("telegram-bot-token",),
    ),
    Case(
        "discord-webhook",
        "curl -X POST https://discord.com/api/webhooks/" + "1234567890123456789/" + _DISCORD,
        _DISCORD,
        ("discord-webhook",),
    ),
    Case("env-db-password", "DB_PASSWORD=" + "hunter2longer", "hunter2longer", ("password",)),
    Case("env-secret-key", "SECRET_KEY=" + _SECRET_KEY, _SECRET_KEY, ("secret",)),
]

#: assignments in .env, shell, YAML, JSON, code, connection-string and URL forms
ASSIGNED: list[Case] = [
    Case("env", "JWT_SECRET=" + "7f3k9Q2mZx8Lp4Vt", "7f3k9Q2mZx8Lp4Vt", ("secret",)),
    Case("env-quoted", 'API_TOKEN="' + "a8F3kL9qZ2xW7vB1" + '"', "a8F3kL9qZ2xW7vB1", ("secret",)),
    Case(
        "env-uuid",
        "RAILWAY_TOKEN=" + "5f0c2a8e-1b7d-4c3e-9a6f-2d8b4e1c7a90",
        "5f0c2a8e-1b7d-4c3e-9a6f-2d8b4e1c7a90",
        ("secret",),
    ),
    Case(
        "shell-export",
        "export GITHUB_TOKEN='" + "q9W8e7R6t5Y4u3I2o1P0" + "'",
        "q9W8e7R6t5Y4u3I2o1P0",
        ("secret",),
    ),
    Case(
        "shell-prefix",
        "PGPASSWORD=" + "Tr0ub4dor3x psql -h db -U app",
        "Tr0ub4dor3x",
        ("password",),
    ),
    Case(
        "shell-docker",
        "docker run -e POSTGRES_PASSWORD=" + "S3cure!Pass postgres:16",
        "S3cure!Pass",
        ("password",),
    ),
    Case(
        "shell-powershell", '$env:API_KEY = "' + "k3J9sL2xQ8wE" + '"', "k3J9sL2xQ8wE", ("secret",)
    ),
    Case("yaml", "  password: " + "Sup3rS3cretValue", "Sup3rS3cretValue", ("password",)),
    Case("yaml-quoted", '  api_key: "' + "8sK2LmQ9xZ4rT7vW" + '"', "8sK2LmQ9xZ4rT7vW", ("secret",)),
    Case("yaml-short", "    db_pass: " + "Xk29!mQp", "Xk29!mQp", ("password",)),
    Case("json", '{"password": "' + "Tr0ub4dor&3" + '"}', "Tr0ub4dor&3", ("password",)),
    Case("json-camel", '{"apiKey": "' + "AbC123xYz789QwE" + '"}', "AbC123xYz789QwE", ("secret",)),
    Case(
        "json-compact",
        '{"client_secret":"' + "9f8e7d6c5b4a3210fedc" + '"}',
        "9f8e7d6c5b4a3210fedc",
        ("secret",),
    ),
    Case("code", "const apiKey = '" + "k3J9sL2xQ8wE5tY" + "';", "k3J9sL2xQ8wE5tY", ("secret",)),
    Case(
        "code-django",
        "SECRET_KEY = 'django-" + "insecure-7#x!k2m@q9z(w8r$e5t^y1u&i3o*p0l'",
        "7#x!k2m@q9z(w8r$e5t^y1u&i3o*p0l",
        ("secret",),
    ),
    Case(
        "connection-string",
        "Server=db;Database=app;User Id=sa;Password=" + "P@ssw0rd2024;",
        "P@ssw0rd2024",
        ("password",),
    ),
    Case(
        "url",
        "mongodb+srv://admin:" + "Adm1nPass2024@cluster0.example.net/db",
        "Adm1nPass2024",
        ("url-password",),
    ),
    Case(
        "url-query",
        "https://api.example.com/v1?api_key=" + "8sK2LmQ9xZ4rT7vW&x=1",
        "8sK2LmQ9xZ4rT7vW",
        ("secret",),
    ),
    Case("cli-flag", "mysql -h db --password " + "Qw3rtyUiop99 app", "Qw3rtyUiop99", ("password",)),
    Case("cli-mysql", "mysql -uroot -p" + "Qw3rtyUiop99 mydb", "Qw3rtyUiop99", ("password",)),
    Case(
        "cli-curl",
        "curl -u admin:" + "Adm1nPassw0rd https://api.example.com/x",
        "Adm1nPassw0rd",
        ("password", "curl-auth-user"),
    ),
]

#: text that looks like an assignment of a secret and is not one
NOT_SECRETS: list[str] = [
    "password = request.form['password']",
    'password = os.environ["DB_PASSWORD"]',
    "token = get_token()",
    "api_key=api_key",
    "password: str",
    "token: string;",
    "password=None",
    "PASSWORD=$DB_PASS",
    "password: ${DB_PASSWORD}",
    "api_key: <your-api-key>",
    "password: changeme",
    "token=xxx",
    "SECRET_KEY=your-secret-key-here",
    "max_tokens=4096",
    '"max_tokens": 1024',
    "input_tokens: 123",
    'token_type: "bearer"',
    "tokens = tokenizer(text)",
    "secret_name: my-db-secret",
    "password_hash = bcrypt(pw)",
    "primary_key=True",
    'sort_key: "created_at"',
    "auth: required",
    "key: value",
    '"key": "user_id"',
    'cache_key = f"user:{uid}"',
    "PWD=/home/user/project",
    "private_key_path: ~/.ssh/id_rsa",
    "github_token: ${{ secrets.GITHUB_TOKEN }}",
    'password: "********"',
    "API_KEY=sk-...",
    'token: "<redacted>"',
    "apiKey: process.env.OPENAI_API_KEY",
    "const token = localStorage.getItem('token')",
    "secret: Optional[str] = None",
    "password=getpass.getpass()",
    '"password": "password"',
    "--password-file /run/secrets/db",
    "--token-limit 2000",
    "Token usage: 12345 tokens",
    "bypass = True",
    "compass: north",
    'keyboard_key = "Enter"',
    "the key: this is important",
    "Secret: do not share",
    "Password: must be at least 8 characters",
    "author: John Smith",
    'auth_url = "https://login.example.com/oauth"',
    "csrf_token = generate_csrf()",
    "TOKEN_EXPIRY=3600",
    "password = ''",
    "token = self.token",
    "password: !vault |",
    "API_KEY=${OPENAI_API_KEY:-}",
    "export PATH=$HOME/bin:$PATH",
    "api_key = settings.OPENAI_API_KEY",
    '"content_type_key": "application/json"',
    "secretsmanager = boto3.client('secretsmanager')",
    "The API key: get it from the dashboard",
    "keyPressed: handleKey",
    "password_reset_url: /reset",
    "git@github.com:org/repo.git",
    'self.key = "_threading_local._localimpl."',
    "DEFAULT_TOKEN_LIMIT = 100000",
    'label: "API Key"',
    'auth_header = f"Bearer {token}"',
    'headers = {"Authorization": f"Bearer {api_key}"}',
    "Authorization: Bearer $TOKEN",
    "Authorization: Bearer <token>",
    "passwordless: true",
]
