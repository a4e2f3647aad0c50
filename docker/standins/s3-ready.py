#!/opt/moto/bin/python
"""`mc ready local`, as MinIO's health check: 0 once the stand-in has replayed its journal and answers."""

import sys
import urllib.request
from pathlib import Path

if sys.argv[1:2] != ["ready"]:
    sys.exit("the stand-in mc knows only `mc ready ALIAS`")
try:
    urllib.request.urlopen("http://127.0.0.1:9000/", timeout=2)
except OSError as exc:
    sys.exit(f"not ready: {exc}")
sys.exit(0 if Path("/data/.ready").exists() else "not ready: replaying the journal")
