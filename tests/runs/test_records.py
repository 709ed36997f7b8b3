"""Records of reported experiments (runs/records.py): what they hold, how a workdir's
history is read back, and the one-line refusals."""

import json
import os
import subprocess
import sys

import pytest

from causal_disent.runs import records
from causal_disent.runs.config_file import record_command

LOG = """\
2026-11-25 20:39:40,682 INFO console: workdir /w; 1 cpu device on 1 host
2026-11-25 20:39:46,720 INFO console: [mcqvae] 892,547 parameters; training 3,250 steps
2026-11-25 21:13:42,817 INFO console: 
summary
  stage   result                                   time
  mcqvae  test PSNR 26.09 dB, codebook perplexity 50.1    20m58s
  ct      test action accuracy 0.832 (chance 0.083)       13m04s
workdir /w
  results.json  final scores of every stage
2026-11-25 21:51:04,372 INFO console: workdir /w; 1 cpu device on 1 host
2026-11-25 21:51:18,339 INFO console: 
summary
  mcqvae  test PSNR 26.09 dB                                0m03s
"""


def test_a_record_holds_command_commit_machine_date_wall_time_and_figures(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setattr(sys, "argv", ["benchmarks/x.py", "--steps=3", "--record=r.json"])
    recorder = records.Recorder(None, tmp_path / "results" / "r.json")
    path = recorder.write({"speed": 1.5}, runs=[{"workdir": "w"}])
    record = records.read_record(path)
    assert record["command"].endswith("benchmarks/x.py --steps=3 --record=r.json")
    assert record["command"].startswith(sys.executable) or not record["command"].startswith("/")
    assert record["figures"] == {"speed": 1.5} and record["runs"] == [{"workdir": "w"}]
    head = subprocess.run(["git", "-C", str(records.REPO_ROOT), "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    assert record["commit"].removesuffix("+dirty") == head
    assert record["machine"]["platform"] == "cpu" and record["machine"]["cores"] >= 1
    assert record["machine"]["cpu"] and record["machine"]["devices"].endswith("cpu")
    assert record["date"].endswith(" UTC") and record["wall_seconds"] >= 0
    assert list(records.read_all(tmp_path / "results")) == ["r"]


def test_the_commit_is_read_without_writing_the_repositorys_index(tmp_path, monkeypatch):
    """`git status` refreshes a stale index under .git/index.lock; a run killed then
    would leave the lock and fail the user's next git command."""
    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c",
                               "user.email=t@t", *args], capture_output=True, text=True,
                              check=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "a.txt").write_text("a")
    git("add", "a.txt")
    git("commit", "-qm", "a")
    os.utime(tmp_path / "a.txt", (1.6e9, 1.6e9))  # same content, stale stat in the index
    index = (tmp_path / ".git" / "index").read_bytes()
    monkeypatch.setattr(records, "REPO_ROOT", tmp_path)
    assert records.commit() == git("rev-parse", "HEAD")  # not "+dirty": content is equal
    assert (tmp_path / ".git" / "index").read_bytes() == index


def test_no_path_writes_nothing_and_a_bad_path_is_refused_before_any_work(tmp_path):
    assert records.Recorder("-m causal_disent.main", None).write({"a": 1}) is None
    with pytest.raises(records.RecordError, match=r"a record is a \.json file"):
        records.Recorder(None, tmp_path / "r.txt")
    (tmp_path / "d.json").mkdir()
    with pytest.raises(records.RecordError, match="is a directory"):
        records.Recorder(None, tmp_path / "d.json")
    (tmp_path / "a_file").write_text("")
    with pytest.raises(records.RecordError, match=r"a_file is not a directory; give --record "
                                                  r"a writable path"):
        records.Recorder(None, tmp_path / "a_file" / "results" / "r.json")


def test_a_hand_made_or_broken_record_is_named(tmp_path):
    (tmp_path / "hand.json").write_text(json.dumps({"figures": {"a": 1}}))
    with pytest.raises(records.RecordError, match="lacks command, commit, machine, date"):
        records.read_record(tmp_path / "hand.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(records.RecordError, match="is not JSON"):
        records.read_record(tmp_path / "broken.json")


def test_log_sessions_give_each_command_its_span_devices_and_stage_times():
    sessions = records.log_sessions(LOG)
    assert sessions == [
        {"started": "2026-11-25 20:39:40 UTC", "ended": "2026-11-25 21:13:42 UTC",
         "devices": "1 cpu device on 1 host", "stage_seconds": {"mcqvae": 1258, "ct": 784},
         "seconds": 2042.0},
        {"started": "2026-11-25 21:51:04 UTC", "ended": "2026-11-25 21:51:18 UTC",
         "devices": "1 cpu device on 1 host", "stage_seconds": {"mcqvae": 3},
         "seconds": 14.0}]


def test_a_stage_of_over_an_hour_keeps_its_hours():
    log = LOG.replace("20m58s", "1h14m02s")
    assert records.log_sessions(log)[0]["stage_seconds"]["mcqvae"] == 4442


def test_a_workdir_keeps_each_commands_provenance_for_its_records(tmp_path):
    record_command(tmp_path, "cd /x && python -m causal_disent.main --config=c.py")
    (tmp_path / "log.txt").write_text(LOG)
    history = records.workdir_history(tmp_path)
    assert history["workdir"] == tmp_path.name
    [command] = history["commands"]
    assert command["command"] == "cd /x && python -m causal_disent.main --config=c.py"
    assert command["commit"] and command["machine"]["platform"] == "cpu"
    assert (tmp_path / "command.txt").read_text().endswith(
        "UTC  cd /x && python -m causal_disent.main --config=c.py\n")
    assert len(history["log_sessions"]) == 2


def test_a_stacked_seed_takes_the_history_of_the_run_that_trained_it(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "log.txt").write_text(LOG)
    (tmp_path / "run" / "config.json").write_text('{"seed": 0, "num_seeds": 2}')
    seed = tmp_path / "run" / "seeds" / "seed_1"
    seed.mkdir(parents=True)
    history = records.workdir_history(seed)
    assert history["workdir"] == "seed_1" and history["stacked_run"] == "run"
    assert history["log_sessions"] == records.log_sessions(LOG)
    (tmp_path / "alone" / "seeds" / "seed_0").mkdir(parents=True)  # no many-seed run above
    assert records.workdir_history(tmp_path / "alone" / "seeds" / "seed_0") == {
        "workdir": "seed_0"}
    (tmp_path / "run" / "seeds" / "seed_2").mkdir()  # not one of the run's seeds
    assert records.workdir_history(tmp_path / "run" / "seeds" / "seed_2") == {
        "workdir": "seed_2"}
