"""Spark's own History Server test suite as the judge of ``/api/v1``: every case of ``HistoryServerSuite``.

The suite (Spark's ``core/src/test/scala/org/apache/spark/deploy/history/HistoryServerSuite.scala``) lists each case
as a name and a REST path; its expected answer is ``<name, each non-word character as _>_expectation.json`` in the
corpus's ``expectations/``, and the logs it reads are the corpus's top-level event logs. One flowscope server on
127.0.0.1 opens those logs (as the suite's History Server reads their directory), each case requests its path, and
the JSON tree must equal the expectation, with every attempt's ``lastUpdated`` and ``lastUpdatedEpoch`` blanked as
the suite blanks them (they are the log files' modification times). The suite's other tests (the zip download, the
error answers, ``/version``) are here too.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Iterator

import httpx
import pytest

from backend.web.app import Settings
from tests.conftest import SPARK_EVENTS, spark_events_missing
from tests.e2e.server import running_server

pytestmark = pytest.mark.spark_events

# (case name, path under /api/v1/), as HistoryServerSuite lists them
CASES = [
    ('application list json', 'applications'),
    ('completed app list json', 'applications?status=completed'),
    ('running app list json', 'applications?status=running'),
    ('minDate app list json', 'applications?minDate=2015-02-10'),
    ('maxDate app list json', 'applications?maxDate=2015-02-10'),
    ('maxDate2 app list json', 'applications?maxDate=2015-02-03T16:42:40.000GMT'),
    ('minEndDate app list json', 'applications?minEndDate=2015-05-06T13:03:00.950GMT'),
    ('maxEndDate app list json', 'applications?maxEndDate=2015-05-06T13:03:00.950GMT'),
    ('minEndDate and maxEndDate app list json',
     'applications?minEndDate=2015-03-16&maxEndDate=2015-05-06T13:03:00.950GMT'),
    ('minDate and maxEndDate app list json', 'applications?minDate=2015-03-16&maxEndDate=2015-05-06T13:03:00.950GMT'),
    ('limit app list json', 'applications?limit=3'),
    ('one app json', 'applications/local-1422981780767'),
    ('one app multi-attempt json', 'applications/local-1426533911241'),
    ('job list json', 'applications/local-1422981780767/jobs'),
    ('job list from multi-attempt app json(1)', 'applications/local-1426533911241/1/jobs'),
    ('job list from multi-attempt app json(2)', 'applications/local-1426533911241/2/jobs'),
    ('one job json', 'applications/local-1422981780767/jobs/0'),
    ('succeeded job list json', 'applications/local-1422981780767/jobs?status=succeeded'),
    ('succeeded&failed job list json', 'applications/local-1422981780767/jobs?status=succeeded&status=failed'),
    ('executor list json', 'applications/local-1422981780767/executors'),
    ('executor list with executor metrics json', 'applications/application_1553914137147_0018/executors'),
    ('stage list json', 'applications/local-1422981780767/stages'),
    ('complete stage list json', 'applications/local-1422981780767/stages?status=complete'),
    ('failed stage list json', 'applications/local-1422981780767/stages?status=failed'),
    ('one stage json', 'applications/local-1422981780767/stages/1'),
    ('one stage json with details', 'applications/local-1422981780767/stages/1?details=true&taskStatus=success'),
    ('one stage attempt json', 'applications/local-1422981780767/stages/1/0'),
    ('one stage attempt json details with failed task',
     'applications/local-1422981780767/stages/1/0?details=true&taskStatus=failed'),
    ('one stage json with partitionId', 'applications/local-1642039451826/stages/2'),
    ('stage task summary w shuffle write', 'applications/local-1430917381534/stages/0/0/taskSummary'),
    ('stage task summary w shuffle read', 'applications/local-1430917381534/stages/1/0/taskSummary'),
    ('stage task summary w/ custom quantiles',
     'applications/local-1430917381534/stages/0/0/taskSummary?quantiles=0.01,0.5,0.99'),
    ('stage task list', 'applications/local-1430917381534/stages/0/0/taskList'),
    ('stage task list w/ offset & length', 'applications/local-1430917381534/stages/0/0/taskList?offset=10&length=50'),
    ('stage task list w/ sortBy', 'applications/local-1430917381534/stages/0/0/taskList?sortBy=DECREASING_RUNTIME'),
    ('stage task list w/ sortBy short names: -runtime',
     'applications/local-1430917381534/stages/0/0/taskList?sortBy=-runtime'),
    ('stage task list w/ sortBy short names: runtime',
     'applications/local-1430917381534/stages/0/0/taskList?sortBy=runtime'),
    ('stage task list w/ status', 'applications/app-20161115172038-0000/stages/0/0/taskList?status=failed'),
    ('stage task list w/ status & offset & length',
     'applications/local-1430917381534/stages/0/0/taskList?status=success&offset=1&length=2'),
    ('stage task list w/ status & sortBy short names: runtime',
     'applications/local-1430917381534/stages/0/0/taskList?status=success&sortBy=runtime'),
    ('stage task list with partitionId', 'applications/local-1642039451826/stages/0/0/taskList'),
    ('stage list with accumulable json', 'applications/local-1426533911241/1/stages'),
    ('stage with accumulable json', 'applications/local-1426533911241/1/stages/0/0'),
    ('stage task list from multi-attempt app json(1)', 'applications/local-1426533911241/1/stages/0/0/taskList'),
    ('stage task list from multi-attempt app json(2)', 'applications/local-1426533911241/2/stages/0/0/taskList'),
    ('excludeOnFailure for stage', 'applications/app-20180109111548-0000/stages/0/0'),
    ('excludeOnFailure node for stage', 'applications/application_1516285256255_0012/stages/0/0'),
    ('rdd list storage json', 'applications/local-1422981780767/storage/rdd'),
    ('executor node excludeOnFailure', 'applications/app-20161116163331-0000/executors'),
    ('executor node excludeOnFailure unexcluding', 'applications/app-20161115172038-0000/executors'),
    ('executor memory usage', 'applications/app-20161116163331-0000/executors'),
    ('executor resource information', 'applications/application_1555004656427_0144/executors'),
    ('multiple resource profiles', 'applications/application_1578436911597_0052/environment'),
    ('stage list with peak metrics', 'applications/app-20200706201101-0003/stages'),
    ('stage with peak metrics', 'applications/app-20200706201101-0003/stages/2/0'),
    ('stage with summaries', 'applications/app-20200706201101-0003/stages/2/0?withSummaries=true'),
    ('app environment', 'applications/app-20161116163331-0000/environment'),
    ('one rdd storage json', 'applications/local-1422981780767/storage/rdd/0'),
    ('miscellaneous process', 'applications/application_1555004656427_0144/allmiscellaneousprocess'),
    ('stage with speculation summary', 'applications/application_1628109047826_1317105/stages/0/0/'),
]

# the suite reads every log at the corpus's top level; the rolling one newer than its expectations is not among them
NOT_SUITE = {"README.md", "SHA256SUMS", "expectations", "historical", "pyspark-4.3", "spark-events-broken",
             "eventlog_v2_local-1766844910796"}


def expectation_name(case: str) -> str:
    return re.sub(r"\W", "_", case) + "_expectation.json"


def blank_last_updated(doc):
    if isinstance(doc, dict):
        return {k: "" if k == "lastUpdated" else 0 if k == "lastUpdatedEpoch" else blank_last_updated(v)
                for k, v in doc.items()}
    if isinstance(doc, list):
        return [blank_last_updated(v) for v in doc]
    return doc


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    missing = spark_events_missing()
    if missing is not None:
        pytest.skip(missing)
    logs = sorted(str(p) for p in SPARK_EVENTS.iterdir() if p.name not in NOT_SUITE)
    settings = Settings(allowed_dirs=[SPARK_EVENTS], open_paths=logs, data_dir=tmp_path_factory.mktemp("data"))
    with running_server(settings) as srv, httpx.Client(base_url=srv.url + "/api/v1/", timeout=120) as client:
        yield client


@pytest.mark.parametrize(("case", "path"), CASES, ids=[c for c, _ in CASES])
def test_history_server_suite_case(api: httpx.Client, case: str, path: str) -> None:
    r = api.get(path)
    assert r.status_code == 200, r.text
    expected = json.loads((SPARK_EVENTS / "expectations" / expectation_name(case)).read_text())
    assert blank_last_updated(r.json()) == expected


def test_every_expectation_has_a_case() -> None:
    missing = spark_events_missing()
    if missing is not None:
        pytest.skip(missing)
    names = {expectation_name(c) for c, _ in CASES}
    assert names == {p.name for p in (SPARK_EVENTS / "expectations").glob("*_expectation.json")}


@pytest.mark.parametrize("attempt", [None, "1", "2"])
def test_logs_download(api: httpx.Client, attempt: str | None) -> None:
    """The zip holds each attempt's log, byte for byte (the suite's two download tests)."""
    path = "applications/local-1430917381535" + (f"/{attempt}" if attempt else "") + "/logs"
    r = api.get(path)
    assert r.status_code == 200, r.text
    with zipfile.ZipFile(io.BytesIO(r.content)) as z:
        names = [n for n in z.namelist() if not n.endswith("/")]
        assert len(names) == (1 if attempt else 2)
        for name in names:
            assert z.read(name) == (SPARK_EVENTS / name).read_bytes()


def test_response_codes_on_bad_paths(api: httpx.Client) -> None:
    for path, status, text in [
            ("applications/foobar", 404, "unknown app: foobar"),
            ("applications/local-1422981780767/stages/12345", 404, "unknown stage: 12345"),
            ("applications/local-1422981780767/stages/1/1", 404, "unknown attempt for stage 1.  Found attempts: [0]"),
            ("applications/local-1430917381534/stages/0/0/taskSummary?quantiles=foo,0.1", 400,
             'Bad value for parameter "quantiles".  Expected a double, got "foo"')]:
        r = api.get(path)
        assert (r.status_code, r.text) == (status, text), path
    assert api.get("applications/local-1422981780767/stages/flimflam").status_code == 404
    assert api.get("foobar").status_code == 404


def test_version(api: httpx.Client) -> None:
    import pyspark

    assert api.get("version").json() == {"spark": pyspark.__version__}
