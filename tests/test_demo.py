"""`make demo` prints what it printed when it was pinned (tests/golden/demo.txt).

The demo is the first thing a new user runs; its output is the one view of
import, log, show, recall, a memory write and status together. Only what
changes from run to run is masked: the temporary folder, the repository's
own path, operation and memory revision ids, today's times and the sizes on
disk. A change of behaviour in any of those commands shows here as a diff;
when the change is meant, write the new output over the golden file
(``HS_UPDATE_GOLDEN=1``) and commit it with the change.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "golden" / "demo.txt"
BIN = Path(sys.executable).parent


def normalised(out: str) -> str:
    tmp = re.search(r"^# demo store in (\S+)/store$", out, re.M)
    assert tmp, out
    out = out.replace(tmp[1], "<tmp>").replace(str(ROOT), "<repo>")
    out = re.sub(r"\boperation [0-9a-f]{16}\b", "operation <op>", out)
    out = re.sub(r"\blast [0-9a-f]{16}\b", "last <op>", out)
    out = re.sub(r"\brevision [0-9a-f]{12}\b", "revision <rev>", out)
    out = re.sub(r"^[0-9a-f]{12}(?=  )", "<rev>", out, flags=re.M)
    out = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", "<now>", out)
    return re.sub(r"^(size:\s+).*$", r"\1<sizes>", out, flags=re.M)


@pytest.mark.skipif(
    shutil.which("make") is None or not (BIN / "hs").exists(),
    reason="needs make and the hs of this interpreter's environment",
)
def test_make_demo_prints_what_it_printed(tmp_path: Path) -> None:
    # (not the make that runs the suite: its jobserver is not this make's)
    drop = ("HISTORY_", "MEMORY_", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["TMPDIR"] = str(tmp_path)  # the demo keeps its store there
    # -o: the venv counts as made (a test never installs anything); BIN: this
    # interpreter's environment, wherever it is
    r = subprocess.run(
        ["make", "-s", "--no-print-directory", "-o", ".venv/.installed", "demo", f"BIN={BIN}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and r.stderr == "", r.stderr
    got = normalised(r.stdout)
    if os.environ.get("HS_UPDATE_GOLDEN"):
        GOLDEN.write_text(got)
    assert got == GOLDEN.read_text()
