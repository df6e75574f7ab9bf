"""``config.toml``: the store's format version, its id and its settings.

Read with tomllib, written with tomli-w through the one atomic write path.
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path
from typing import Any

from histstore.errors import BadInput, CorruptStore, NoStore, UnsupportedStore
from histstore.store.clock import now_rfc3339
from histstore.store.fsutil import atomic_write

FORMAT_VERSION = 2
CONFIG_NAME = "config.toml"


def default_store_path() -> Path:
    """``--store``, else ``$HISTORY_DIR``, else the platform data directory."""
    env = os.environ.get("HISTORY_DIR")
    if env:
        return Path(env).expanduser()
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "histstore"
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / "histstore"
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else home / ".local" / "share") / "histstore"


#: what ``[redact] ruleset`` is taken to be in a store that does not name one:
#: it was written before the rule set was recorded, by the 16 built-in patterns
LEGACY_RULESET = "0+histstore-16"


def new_config() -> dict[str, Any]:
    import uuid

    from histstore.store.ruleset import ruleset_id  # only hs init names the rule set

    ruleset = ruleset_id()
    return {
        "store": {"format": FORMAT_VERSION, "id": str(uuid.uuid4()), "created": now_rfc3339()},
        "redact": {"ruleset": ruleset, "rulesets": [ruleset], "patterns": []},
    }


def ruleset_of(config: dict[str, Any]) -> str:
    """The rule set the store's writers redact with now (it decides the ids
    of what they store)."""
    return str(config.get("redact", {}).get("ruleset", LEGACY_RULESET))


def rulesets_of(config: dict[str, Any]) -> list[str]:
    """Every rule set whose redaction the store's objects may carry: each
    writer's, and what syncs brought from other stores, oldest first."""
    section = config.get("redact", {})
    return list(section.get("rulesets", [section.get("ruleset", LEGACY_RULESET)]))


def patterns_of(config: dict[str, Any]) -> list[str]:
    """The store's extra redaction patterns, sorted, each once."""
    return sorted(set(config.get("redact", {}).get("patterns", [])))


def write_config(root: Path, config: dict[str, Any]) -> None:
    import tomli_w  # only init and config changes write it

    atomic_write(root / CONFIG_NAME, tomli_w.dumps(config).encode("utf-8"))


def read_config(root: Path) -> dict[str, Any]:
    path = root / CONFIG_NAME
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise NoStore(
            f"no store at {root}", hint="create one with `hs init`, or point --store at it"
        ) from None
    except NotADirectoryError:
        raise NoStore(f"no store at {root}: it is not a directory") from None
    try:
        config = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise CorruptStore(
            f"{path} is not valid TOML: {e}", hint="fix or restore the file"
        ) from None
    version = config.get("store", {}).get("format")
    if version == 1:
        raise UnsupportedStore(
            f"the store at {root} has format version 1; this hs reads version {FORMAT_VERSION}",
            hint="run `hs upgrade` to upgrade it in place (nothing is lost)",
        )
    if version != FORMAT_VERSION:
        raise UnsupportedStore(
            f"the store at {root} has format version {version!r}; "
            f"this hs reads version {FORMAT_VERSION}",
            hint="use the hs release that wrote it, or upgrade hs",
        )
    patterns = config.get("redact", {}).get("patterns", [])
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise BadInput(f"{path}: [redact] patterns must be a list of strings")
    redact = config.get("redact", {})
    rulesets = redact.get("rulesets", [])
    if not isinstance(redact.get("ruleset", LEGACY_RULESET), str) or not (
        isinstance(rulesets, list) and all(isinstance(r, str) for r in rulesets)
    ):
        raise BadInput(
            f"{path}: [redact] ruleset must be a rule-set id and rulesets a list of them"
        )
    return config
