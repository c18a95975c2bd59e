import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Every `gradlint` the tests start keeps its result cache here, not in the (snapshotted) project
# directories the tests create; the cache's own tests set or clear the variable themselves.
_CACHE = tempfile.TemporaryDirectory(prefix="gradlint-test-cache-")
os.environ["GRADLINT_CACHE_DIR"] = _CACHE.name
