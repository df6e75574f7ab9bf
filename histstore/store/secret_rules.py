"""histstore's own secret rules: the provider formats it has always caught, a few
that gitleaks' default rules miss, and keyword rules for assignments.

Each rule is an RE2 regular expression (google-re2: no lookarounds, no
backreferences, so matching is linear) with the keywords the prefilter looks for
(every match contains one of them, case-insensitively), the capture group
that holds the secret (``s``; none = the whole match) and, for the rules whose
regex alone says too little, a check on the match. Checks are Python and look
only at bounded parts of a match (a name of at most 61 characters, a value of
at most 256, a few bytes around them), so they cost a constant per match.

A regex here may consume one character on either side of its secret (``B``
and ``E`` below stand in for the lookarounds RE2 does not have); the scanner
resumes each rule after its secret, not after its match, so two secrets one
character apart are both found.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

#: bump on any change to what the rules below redact (a regex, a keyword, a
#: check, a word list): redaction decides the ids of everything stored
VERSION = "3"

# Where a token may start: the start, a character that cannot be part of it, or
# right after a JSON escape (text holding JSON as written, "\nsk-...").
B = r"(?:^|[^A-Za-z0-9_]|\\[nrtbf]|\\u[0-9A-Fa-f]{4})"
# Where a fixed-length token must end.
E = r"(?:[^A-Za-z0-9_-]|$)"

#: a check: (the text, the match, start and end of the secret) -> the kind to
#: report, or None to drop the match
Check = Callable[[bytes, Any, int, int], "str | None"]


class Spec(NamedTuple):
    kind: str
    keywords: tuple[str, ...]
    regex: str
    check: str | None = None  # the name of a function in CHECKS


_UPPER_OR_DIGIT = re.compile(rb"[A-Z0-9]")


def _has_upper_or_digit(text: bytes, m: Any, s: int, e: int) -> str | None:
    """``sk-learn-style-estimators`` is prose; a key has an uppercase letter or a digit."""
    return "" if _UPPER_OR_DIGIT.search(text, s, min(e, s + 256)) else None


# ---------------------------------------------------------------------------
# provider formats (the kinds histstore always had, then new ones)

PROVIDERS: tuple[Spec, ...] = (
    Spec(
        # the whole block; its body stops at the first "-----" or '"', so a
        # header with no END line (the next rule) never runs into other text
        "private-key",
        ("private key",),
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY-----(?:[^\"-]|-{1,4}[^\"-])*"
        r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY-----",
    ),
    Spec(
        # a block cut short: the header and the base64 body after it
        "private-key",
        ("private key",),
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY-----(?:[A-Za-z0-9+/=\s]|\\[nrt])*",
    ),
    Spec("anthropic-key", ("sk-ant-",), B + r"(?P<s>sk-ant-[A-Za-z0-9_-]{20,})"),
    Spec("openai-key", ("sk-",), B + r"(?P<s>sk-[A-Za-z0-9_-]{20,})", "upper_or_digit"),
    Spec(
        "stripe-key",
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
        B + r"(?P<s>[sr]k_(?:live|test)_[A-Za-z0-9]{16,})",
        "upper_or_digit",
    ),
    Spec(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        B + r"(?P<s>gh[pousr]_[A-Za-z0-9]{36,})",
    ),
    Spec("github-token", ("github_pat_",), B + r"(?P<s>github_pat_[A-Za-z0-9_]{22,})"),
    Spec("gitlab-token", ("glpat-",), B + r"(?P<s>glpat-[A-Za-z0-9_-]{20,})"),
    Spec("huggingface-token", ("hf_",), B + r"(?P<s>hf_[A-Za-z0-9]{30,})" + E),
    Spec("aws-access-key-id", ("akia", "asia"), B + r"(?P<s>(?:AKIA|ASIA)[A-Z0-9]{16})" + E),
    Spec(
        # the label (aws_secret_access_key, SecretAccessKey, ...) is kept
        "aws-secret-key",
        ("ecret",),
        r"(?:ecret|ECRET)(?i:[_-]?access[_-]?key)(?:\\*[\"'])?[ \t]*(?:=>|[:=])[ \t]*"
        r"(?:\\*[\"'])?(?P<s>[A-Za-z0-9/+=]{20,})",
    ),
    Spec(
        "slack-token",
        ("xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-"),
        B + r"(?P<s>xox[bpars]-[A-Za-z0-9-]{10,})",
    ),
    Spec(
        "slack-webhook",
        ("hooks.slack.com",),
        r"https:(?:\\?/){2}hooks\.slack\.com\\?/(?:services|workflows|triggers)"
        r"(?:\\?/[A-Za-z0-9_-]+)+",
    ),
    Spec("google-api-key", ("aiza",), B + r"(?P<s>AIza[A-Za-z0-9_-]{35})" + E),
    Spec("jwt", ("eyj",), B + r"(?P<s>eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*)"),
    Spec(
        # ':' of "scheme://" (after a letter or digit), the user (kept), ':',
        # the password, '@', the host. The password runs to the last '@' before
        # whitespace, '/', '"' or '\\'.
        "url-password",
        ("://", ":\\/\\/"),
        r"[A-Za-z0-9]:(?:\\?/){2}[^\s:/?#@\"\\]*:(?P<s>[^\s/\"\\]+)@[A-Za-z0-9\[]",
    ),
    Spec("bearer-token", ("bearer",), B + r"[Bb]earer[ \t]+(?P<s>[A-Za-z0-9._~+/-]{20,}=*)"),
    Spec(
        "basic-auth",
        ("uthorization",),
        r"uthorization(?:\\*[\"'])?[ \t]*[:=][ \t]*(?:\\*[\"'])?[ \t]*(?i:basic)[ \t]+"
        r"(?P<s>[A-Za-z0-9+/]{8,}={0,2})",
    ),
    Spec(
        "discord-webhook",
        ("discord",),
        r"(?i)https:(?:\\?/){2}(?:ptb\.|canary\.)?discord(?:app)?\.com\\?/api\\?/webhooks\\?/"
        r"[0-9]{17,20}\\?/(?P<s>[A-Za-z0-9_-]{60,80})",
    ),
    Spec(
        # a bot token with no "telegram" near it: <bot id>:AA<33>
        "telegram-bot-token",
        (":aa",),
        B + r"(?P<s>[0-9]{8,10}:AA[A-Za-z0-9_-]{33})" + E,
    ),
)


# ---------------------------------------------------------------------------
# assignments: NAME = value in .env, shell, YAML, JSON, code, INI, connection
# strings, URL queries; command-line flags; credentials in URLs and commands

_KW = (
    r"pass(?:word|wd|phrase)?|pwd|secret|token|credentials?|auth|key|cookie|"
    r"private[_.-]?key|conn(?:ection)?[_.-]?str(?:ing)?"
)
_NAME = r"(?P<name>[A-Za-z0-9_.-]*?(?i:" + _KW + r"))"
_VALUE = (
    r"(?:\"(?P<dq>[^\"\r\n]+)\"|'(?P<sq>[^'\r\n]+)'|`(?P<bq>[^`\r\n]+)`"
    r"|(?P<uq>[^\s'\"`;,&|<>(){}\[\]]+)(?P<call>\(?))"
)
_LEFT = r"(?:^|[^A-Za-z0-9_.$-])"  # where a name may start
_NAME_KEYWORDS = ("pass", "pwd", "secret", "token", "credential", "auth", "key", "cookie", "conn")

ASSIGNMENTS: tuple[Spec, ...] = (
    Spec(
        # KEY=value, export KEY="value", key = 'v', key := "v", 'key' => 'v',
        # "key": "v", key: v, $env:KEY = "v", Password=...; in a connection string
        "secret",
        _NAME_KEYWORDS,
        _LEFT + _NAME + r"[\"'\]]{0,2}[ \t]{0,3}(?P<sep>:=|=>|\?=|\+=|=|:)[ \t]{0,3}" + _VALUE,
        "assignment",
    ),
    Spec(
        # NAME=value in .env and shell: the value runs to the next space, so a
        # secret holding ( & ; | < > [ ] { } is caught whole
        "secret",
        ("pass", "pwd", "secret", "token", "credential", "auth", "key", "cookie"),
        r"(?:^|[^A-Za-z0-9_.$-])(?P<name>[A-Z][A-Z0-9_]*?(?:PASS(?:WORD|WD|PHRASE)?|PWD|"
        r"SECRET|TOKEN|CREDENTIALS?|AUTH|KEY|COOKIE))(?P<sep>=)(?P<uq>[^\s'\"`$][^\s'\"`]*)",
        "assignment",
    ),
    Spec(
        # --password value, --api-key=value, -token value
        "secret",
        ("pass", "pwd", "token", "secret", "key"),
        r"(?:^|\s)--?(?P<name>[A-Za-z0-9-]*?(?i:pass(?:word|wd|phrase)?|pwd|token|secret|"
        r"api-?key|access-key|auth-key|key))(?:=|[ \t]+)" + _VALUE,
        "flag",
    ),
    Spec(
        # https://<token>@host: a token as the whole user info
        "url-token",
        ("://",),
        r"(?i)\b[a-z][a-z0-9+.-]{1,20}://(?P<uq>[A-Za-z0-9_-]{20,})@[A-Za-z0-9\[._-]",
        "url_token",
    ),
    Spec(
        # curl / wget / httpie ... -u user:password
        "password",
        ("curl", "wget", "http", "xh"),
        r"\b(?:curl|wget|http|https|xh|httpie)\b[^\n]{0,200}?[ \t](?:-u|--user|--proxy-user)"
        r"(?:=|[ \t]+)[\"']?[^\s:'\"]+:(?P<uq>[^\s'\"]{3,})",
        "cli_password",
    ),
    Spec(
        # mysql -uroot -pPASSWORD
        "password",
        ("mysql",),
        r"\bmysql(?:dump|admin|sh)?\b[^\n]{0,200}?[ \t]-p(?P<uq>[^\s'\"-][^\s'\"]{3,})",
        "cli_password",
    ),
)

# --- names

_STRONG = re.compile(
    r"(?i)(?:secret|token|credentials?|password|passwd|passphrase|private[_.-]?key|"
    r"conn(?:ection)?[_.-]?str(?:ing)?)$"
)
# pass, pwd, key, auth, cookie count only at a boundary: not bypass, compass, monkey
_BOUNDARY = re.compile(
    r"(?:^|[_.-])(?i:pass|pwd|key|auth|cookie)$|(?<=[a-z0-9])(?:Pass|Pwd|Key|Auth|Cookie)$"
)
_COMPOUND_KEY = re.compile(
    r"(?i)(?:api|access|account|secret|private|auth|master|signing|encryption|client|shared|"
    r"sharedaccess|app|license|subscription|service|deploy|admin|hmac|webhook|consumer|db|"
    r"stripe|openai|anthropic)[_.-]?key$"
)
_NAME_DENY = re.compile(
    r"(?i)(?:^|[_.-])(?:public|pub|primary|foreign|sort|partition|cache|idempotency|lookup|"
    r"dedupe?|hash|row|range|composite|unique|natural|surrogate|object|map|dict|shard|routing|"
    r"group|message|i18n|translation|hot|short|keyboard|press|next|prev|max|min|num|total|"
    r"input|output|cached|completion|prompt|reasoning|csrf|xsrf|page|pagination|continuation|"
    r"cursor|sync|refresh_token_expires|secret_name|token_type|react|vue|list|item|ssh|gpg|"
    r"pgp|s3|bucket)[_.-]?(?:key|token|auth|sas|signature|cookie)$"
    r"|^(?:PWD|OLDPWD|key|Key|KEY|auth|Auth|AUTH|token_type|tokens)$"
)
_PASS_NAME = re.compile(r"(?i)(?:pass(?:word|wd|phrase)?|pwd)$")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


class _Name(NamedTuple):
    ok: bool  # it names a secret
    weak: bool  # only as key/auth/cookie (not api_key, secret_key, password, ...)
    password: bool  # it names a password


@functools.lru_cache(maxsize=4096)
def _name(name: str) -> _Name:
    """What a name says about its value (cached: text repeats its names)."""
    strong = bool(_STRONG.search(name) or _COMPOUND_KEY.search(name))
    password = bool(_PASS_NAME.search(name))
    ok = not _NAME_DENY.search(name) and (strong or bool(_BOUNDARY.search(name)))
    return _Name(ok, not (strong or password), password)


# --- values

PLACEHOLDER_WORDS = frozenset(
    [
        "changeme",
        "change_me",
        "change-me",
        "changeit",
        "password",
        "passwd",
        "secret",
        "token",
        "apikey",
        "api_key",
        "example",
        "sample",
        "dummy",
        "placeholder",
        "redacted",
        "hidden",
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "empty",
        "required",
        "optional",
        "string",
        "str",
        "int",
        "bool",
        "boolean",
        "any",
        "default",
        "todo",
        "tbd",
        "test",
        "testing",
        "foo",
        "bar",
        "baz",
        "value",
        "abc123",
        "123456",
        "12345678",
        "password1",
        "password123",
        "secret123",
        "notasecret",
        "mysecret",
        "mypassword",
        "yourpassword",
        "supersecret",
        "letmein",
        "qwerty",
        "bearer",
        "basic",
        "hunter2",
        "admin123",
        "xxxxxx",
        "s3cr3t",
        "p@ssw0rd",
        "optional[str]",
    ]
)
_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\(.*\)|\$\{\{.*\}\}|\{\{.*\}\}|<[^>]*>|"
    r"%[A-Za-z_]+%|%s|\*+|x+|\.+|…+|#+|-+|_+|\?+)$"
    r"|^(?:your|my|the|some|insert|enter|put|add|replace|example|sample|fake|dummy|test|mock)"
    r"[_\- ]"
    r"|[_\- ](?:here|goes|placeholder)$|^(?:sk|pk|rk)_(?:test|live)_x+$|example|\$\{|\{\{|%\(|"
    r"\{[A-Za-z_][\w.()\[\]]*\}|^\[.*\]$|x{5,}|\*{3,}|\.{3}|…|<redacted>|\[redacted\]"
)
_CODE_REF = re.compile(
    r"^[A-Za-z_$][\w$]{0,23}(?:\.[A-Za-z_$][\w$]{0,23})+$"  # self.password, process.env.X
    r"|^_?[a-z][a-z0-9]{0,20}(?:_[a-z0-9]{1,20})+$"  # snake_case identifier
    r"|^[A-Za-z_$][A-Za-z$]*$"  # an identifier without digits (camelCase, CONSTANT)
    r"|^[A-Z_][A-Z0-9_]*_[A-Z0-9_]+$"  # CONSTANT_NAME with digits
    r"|^[0-9][0-9.,_:-]*[kKmMgG]?$"  # numbers, ports, sizes, times
    r"|^(?:/|\./|\.\./|~/|[A-Za-z]:\\)"  # file paths
    r"|^https?://|\.(?:pem|key|crt|json|txt|ya?ml|env|p12|pfx|der|pub)$"
    r"|^\w+\(|^(?:os|process|env|config|settings|self|this|request|req|args|opts|options|"
    r"params)[\.\[]"
)
_WORDS = re.compile(
    r"^(?:[A-Z]?[a-z]{2,}|[A-Z]{2,}|[a-z])"
    r"(?:[_.\- /:](?:[A-Z]?[a-z]{2,}|[A-Z]{2,}|[a-z])|[A-Z][a-z]+)*$"
)
_TYPE_NAME = re.compile(r"[A-Z][A-Za-z]*[0-9]{0,2}[A-Za-z]*")
_MODULE = re.compile(r"^[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+\.?$")
_QUOTED_REF = re.compile(r"^(?:/|\./|~/)|^https?://")
_LOWER_WORD = re.compile(r"[a-z]{1,11}")
_YAML_TAG = re.compile(r"![A-Za-z]+")
_CLASSES = (
    re.compile(r"[a-z]"),
    re.compile(r"[A-Z]"),
    re.compile(r"[0-9]"),
    re.compile(r"[^A-Za-z0-9]"),
)
_DIGITS = re.compile(r"[0-9]")


def entropy(data: bytes | str) -> float:
    """Shannon entropy in bits per character (of bytes: per byte)."""
    n = len(data)
    if not n:
        return 0.0
    # short data (a secret) is counted in C, one character at a time
    counts = Counter(data).values() if n > 1024 else [data.count(c) for c in set(data)]  # type: ignore[arg-type]
    log2 = math.log2
    return log2(n) - sum(c * log2(c) for c in counts) / n


def _classes(v: str) -> int:
    return sum(1 for rx in _CLASSES if rx.search(v))


def _placeholder(v: str, name: str | None) -> bool:
    lv = v.lower()
    return (
        not v
        or lv in PLACEHOLDER_WORDS
        or bool(_PLACEHOLDER.search(v))
        or (name is not None and lv == name.lower())
        or bool(_YAML_TAG.fullmatch(v))
    )


@functools.lru_cache(maxsize=4096)
def _value_kind(name: str | None, v: str, quoted: bool, password: bool) -> str | None:
    """The kind of an assigned value (``password`` or ``secret``), None if it is
    no secret: a placeholder, a reference to code, a word."""
    v = v.strip()
    if _placeholder(v, name):
        return None
    if not quoted and _CODE_REF.search(v):
        return None
    if quoted and (_QUOTED_REF.search(v) or _MODULE.match(v)):
        return None
    if _WORDS.match(v) and len(v) <= 64:
        return None  # words and identifiers: no-password, challengePassword
    if not quoted and _TYPE_NAME.fullmatch(v) and _WORDS.match(_DIGITS.sub("", v)):
        return None  # a type annotation: private_key: PKCS7PrivateKeyTypes
    if password:
        # a password may be short and plain; a lower-case word alone is not one
        ok = len(v) >= 6 and not _LOWER_WORD.fullmatch(v) and " " not in v
        return "password" if ok else None
    ok = len(v) >= 10 and " " not in v and _classes(v) >= 2 and entropy(v) >= 3.0
    return "secret" if ok else None


_WANTED = ("name", "sep", "dq", "sq", "bq", "uq", "call")


def _groups(m: Any) -> dict[str, tuple[int, int]]:
    """The spans of the named groups of interest that took part in the match."""
    spans, index = m.spans, m.index
    return {g: spans[index[g]] for g in _WANTED if g in index and spans[index[g]][0] >= 0}


def group_index(rx: Any) -> dict[str, int]:
    """Group name -> number of a compiled RE2 regex (google-re2 gives bytes
    names for a bytes pattern, and rebuilds the mapping on every access)."""
    return {(k.decode() if isinstance(k, bytes) else k): v for k, v in rx.groupindex.items()}


#: the most of a name (its end) and of a value (its start) a check reads: a
#: check costs a constant per match however long the match
NAME_MAX = 64
VALUE_MAX = 256


def _name_text(text: bytes, span: tuple[int, int]) -> str:
    s, e = span
    return text[max(s, e - NAME_MAX) : e].decode("utf-8", "replace")


def _value_text(text: bytes, s: int, e: int) -> str:
    return text[s : min(e, s + VALUE_MAX)].decode("utf-8", "replace")


def _value(text: bytes, g: dict[str, tuple[int, int]]) -> tuple[str, str, tuple[int, int]] | None:
    for grp in ("dq", "sq", "bq", "uq"):
        if grp in g:
            s, e = g[grp]
            return grp, _value_text(text, s, e), (s, e)
    return None


def _assignment(text: bytes, m: Any, s: int, e: int) -> str | None:
    g = _groups(m)
    if "name" not in g or (found := _value(text, g)) is None:
        return None
    grp, v, (vs, _ve) = found
    ns, ne = g["name"]
    name = _name_text(text, g["name"])
    about = _name(name)
    if not about.ok:
        return None
    if text[max(0, ns - 2) : ns] == b"::":
        return None  # a namespaced type: "AWS::IAM::AccessKey": "<hash>"
    sep = text[g["sep"][0] : g["sep"][1]]
    unquoted = grp == "uq"
    if sep == b":" and unquoted and not re.match(rb"[\"'\]]{0,2}:[ \t]", text[ne : ne + 4]):
        return None  # key:value with no space is no YAML: ARNs, URNs, rst roles
    if about.weak:
        # a bare *_KEY, *auth, *cookie: only NAME=value (.env) or ?key=value
        between = text[ne:vs]
        lead = text[max(0, ns - 1) : ns]
        env_style = _ENV_NAME.fullmatch(name) and between in (b"=", b'="', b"='")
        query = lead in (b"?", b"&") and between == b"="
        if not (env_style or query):
            return None
    if "call" in g and g["call"][1] > g["call"][0]:
        return None  # a function call: token = get_token(...)
    if grp == "bq" and sep == b":":
        return None  # a reStructuredText role, :token:`name`
    return _value_kind(name, v, not unquoted, about.password)


def _flag(text: bytes, m: Any, s: int, e: int) -> str | None:
    g = _groups(m)
    if "name" not in g or (found := _value(text, g)) is None:
        return None
    grp, v, _span = found
    if "call" in g and g["call"][1] > g["call"][0]:
        return None
    name = _name_text(text, g["name"])
    if _NAME_DENY.search(name):
        return None
    return _value_kind(name, v, grp != "uq", _name(name).password)


def _url_token(text: bytes, m: Any, s: int, e: int) -> str | None:
    v = _value_text(text, s, e)
    if _placeholder(v, None):
        return None
    return "url-token" if entropy(v) >= 3.5 and _classes(v) >= 2 else None


def _cli_password(text: bytes, m: Any, s: int, e: int) -> str | None:
    v = _value_text(text, s, e)
    if _placeholder(v, None) or v.startswith("$"):
        return None
    return "password" if len(v) >= 6 and not _LOWER_WORD.fullmatch(v) else None


CHECKS: dict[str, Check] = {
    "upper_or_digit": _has_upper_or_digit,
    "assignment": _assignment,
    "flag": _flag,
    "url_token": _url_token,
    "cli_password": _cli_password,
}

#: the secret group of a rule whose value group is one of these
VALUE_GROUPS = ("s", "dq", "sq", "bq", "uq")


def digest_material() -> dict[str, Any]:
    """Everything above that decides what is redacted, as JSON data (for the rule-set id)."""
    return {
        "version": VERSION,
        "limits": [NAME_MAX, VALUE_MAX],
        "providers": [list(s) for s in PROVIDERS],
        "assignments": [list(s) for s in ASSIGNMENTS],
        "names": [
            rx.pattern
            for rx in (_STRONG, _BOUNDARY, _COMPOUND_KEY, _NAME_DENY, _PASS_NAME, _ENV_NAME)
        ],
        "values": sorted(PLACEHOLDER_WORDS)
        + [rx.pattern for rx in (_PLACEHOLDER, _CODE_REF, _WORDS, _TYPE_NAME, _MODULE)],
    }
