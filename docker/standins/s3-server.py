#!/opt/moto/bin/python
"""`minio server DIR [--console-address ...]` as moto's S3 server on :9000, its state journaled in DIR."""

import os
import sys
import threading
from pathlib import Path

args = [a for a in sys.argv[1:] if not a.startswith("--") and ":" not in a]
if args[:1] != ["server"] or len(args) < 2:
    sys.exit("usage: minio server DIR [--console-address ADDR]")
journal = Path(args[1]) / "moto-journal.jsonl"
os.environ["MOTO_RECORDER_FILEPATH"] = str(journal)  # read when moto is imported
os.environ.pop("MOTO_ENABLE_RECORDING", None)

from moto.moto_api import recorder  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402

ready = Path(args[1]) / ".ready"
ready.unlink(missing_ok=True)
record_request = recorder._record_request


def record_writes(request, body=None):  # reads (and the health check) need no replay
    if request.method in ("PUT", "POST", "DELETE"):
        record_request(request, body)


recorder._record_request = record_writes
server = ThreadedMotoServer(ip_address="0.0.0.0", port=9000, verbose=False)
server.start()
if journal.exists():
    recorder.replay_recording(target_host="http://127.0.0.1:9000")  # not journaled again
    print(f"stand-in s3: replayed {sum(1 for _ in journal.open())} requests from {journal}", flush=True)
recorder.start_recording()
ready.write_text("ready\n")
print("stand-in s3: moto listening on :9000", flush=True)
threading.Event().wait()
