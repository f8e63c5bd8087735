"""Make the job store of the previous release (schema 3, main at e335a23) for the migration
test: run with that release's code first on the path, e.g.

    git archive e335a23 rocmtui | tar -x -C /tmp/prev
    PYTHONPATH=/tmp/prev .venv/bin/python tests/data/store_v3/make.py tests/data/store_v3

Two finished jobs: rocmtui's own `demo-pytorch` (its log names 3 Dockerfile steps, 1 cached,
and its folder holds sccache.json with 92% hits) and one started elsewhere (BuildKit's step
counts only, no log). The rows' job_dir is the folder given; the test points them at its copy.
"""

import sys
from pathlib import Path

from rocmtui.core.history.outside import OutsideBuild
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.schema import SCHEMA_VERSION
from rocmtui.core.jobs.store import JobStore, write_json_atomic
from rocmtui.core.states import JobState

assert SCHEMA_VERSION == 3, SCHEMA_VERSION
root = Path(sys.argv[1])
store = JobStore(root)
LOG = """\
#1 [internal] load build definition from Dockerfile
#1 DONE 0.0s
#5 [demo-base 1/3] FROM docker.io/library/rocm-base:local
#5 DONE 0.0s
#6 [demo-base 2/3] COPY fake-compile.sh /usr/local/bin/fake-compile
#6 CACHED
#7 [demo-base 3/3] RUN mkdir -p /opt/rocm-bake
#7 0.2 [1/40] Building HIP object
#7 DONE 4.0s
#8 [demo-pytorch 1/1] RUN fake-compile pytorch 2.15.0
#8 DONE 40.0s
"""


def own(job_id: str, job_dir: Path) -> JobRecord:
    return JobRecord(
        id=job_id,
        target="demo-pytorch",
        arch="gfx1201",
        node="local",
        endpoint="unix:///x",
        push=False,
        overrides={},
        command=("docker", "buildx", "bake"),
        user="ci",
        host="snoc-strix",
        bake_file="bake/demo.hcl",
        job_dir=str(job_dir),
        started_at=1_764_000_000.0,
        ended_at=1_764_000_050.0,
        state=JobState.SUCCEEDED,
        exit_code=0,
    )


def elsewhere(job_id: str, job_dir: Path) -> JobRecord:
    return JobRecord(
        id=job_id,
        target="demo-vllm",
        arch="gfx950",
        node="local",
        endpoint="unix:///x",
        push=False,
        overrides={},
        command=(),
        user="",
        host="",
        bake_file="",
        job_dir=str(job_dir),
        started_at=1_764_000_100.0,
        ended_at=1_764_000_130.0,
        state=JobState.SUCCEEDED,
        buildkit_ref="r1",
        outside=OutsideBuild(
            ref="r1",
            name="bake/demo (demo-vllm)",
            target="demo-vllm",
            build_args={"GFX_ARCH": "gfx950"},
            status="completed",
            total_steps=12,
            cached_steps=12,
            duration=29.5,
            inspected=True,
        ),
    )


record = store.create(own)
record.log_path.write_text(LOG)
write_json_atomic(
    record.path / "sccache.json",
    {
        "requests": 50,
        "executed": 50,
        "hits": 46,
        "misses": 4,
        "errors": 0,
        "rate": 0.92,
        "backend": "Local disk",
        "location": "Local disk",
        "reports": 1,
    },
)
store.create_for_ref("r1", "local", elsewhere)
print(store.db_path)
