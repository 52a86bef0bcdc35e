"""A study journal cut off mid-record (a crash or a full disk during an append) is repaired before
the next append; any other damage is one line naming the journal file and line (exit 1), in tune
and report alike, and nothing is written to the damaged journal."""

from __future__ import annotations

import json

import optuna
import pytest
from tinyspecs import EW

from autotile.errors import StorageError
from autotile.tune.storage import JOURNAL_NAME, JournalDamaged, make_storage

NAME = "elementwise/ascend910b2/fp16/n=4096/vector"


def _one_line(err: str) -> bool:
    return err.count("\n") == 1 and "Traceback" not in err


def _records(path) -> list[dict]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.splitlines()]


@pytest.fixture
def tuned(run_cli, write_spec, tmp_path):
    """(spec, out): a finished run of the tiny elementwise spec."""
    spec, out = write_spec(EW), tmp_path / "out"
    assert run_cli("tune", spec, "--out", str(out), "--quiet")[0] == 0
    return spec, out


def test_a_record_cut_off_at_the_end_is_dropped_before_the_next_append(run_cli, tuned):
    spec, out = tuned
    journal = out / JOURNAL_NAME
    whole = journal.read_bytes()
    journal.write_bytes(whole[:-20])  # a crash mid-append: the last record has no end
    code, _, err = run_cli("report", str(out))
    assert code == 0 and journal.read_bytes() == whole[:-20]  # a report changes nothing
    code, _, err = run_cli("tune", spec, "--out", str(out), "--quiet", "--trials", "14")
    assert code == 0, err
    last = whole[:-20].rfind(b"\n") + 1
    dropped = len(whole) - 20 - last
    assert f"{journal}: dropped {dropped} bytes of an incomplete last record" in err and _one_line(err)
    assert journal.read_bytes().startswith(whole[:last])
    _records(journal)  # every line a record again
    study = optuna.load_study(study_name=NAME, storage=make_storage(None, out))
    assert sum(t.state.is_finished() for t in study.get_trials()) >= 14
    assert run_cli("report", str(out))[0] == 0
    assert run_cli("tune", spec, "--out", str(out), "--quiet", "--trials", "15")[0] == 0


def test_a_live_writer_does_not_append_onto_a_cut_off_record(tmp_path, capsys):
    storage = make_storage(None, tmp_path)
    storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], "a")
    with open(tmp_path / JOURNAL_NAME, "ab") as f:  # another writer died mid-append
        f.write(b'{"op_code":0,"worker_id":"dead","study_na')
    storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], "b")
    assert "dropped 41 bytes" in capsys.readouterr().err
    assert [r.get("study_name") for r in _records(tmp_path / JOURNAL_NAME)] == ["a", "b"]
    assert [s.study_name for s in make_storage(None, tmp_path).get_all_studies()] == ["a", "b"]


def test_a_journal_with_only_a_cut_off_record_starts_empty(tmp_path, capsys):
    (tmp_path / JOURNAL_NAME).write_bytes(b'{"op_code":0,"work')
    assert make_storage(None, tmp_path).get_all_studies() == []
    assert (tmp_path / JOURNAL_NAME).read_bytes() == b""
    assert "dropped 18 bytes" in capsys.readouterr().err


DAMAGE = {  # what is written as line 5 -> what the error says
    "garbage": (b"garbage{\n", "not JSON"),
    "unknown op_code": (b'{"op_code":99,"worker_id":"w"}\n', "unknown operation code 99"),
    "undecodable bytes": (b'{"op_code":2,"worker_id":"\xff\xfe"}\n', "not UTF-8"),
    "not a record": (b"[1, 2]\n", "a JSON list, not a record"),
    "one Optuna cannot apply": (b'{"op_code":0,"worker_id":"w","study_name":"z","directions":[7]}\n',
                                "a record Optuna cannot apply: ValueError: 7 is not a valid StudyDirection"),
    "a failed assertion": (b'{"op_code":2,"worker_id":"w","study_id":0,"user_attr":{"a":1,"b":2}}\n',
                           "a record Optuna cannot apply: AssertionError"),
}


@pytest.mark.parametrize("where", ["middle", "end"])
@pytest.mark.parametrize("kind", list(DAMAGE))
@pytest.mark.parametrize("cmd", ["tune", "report"])
def test_a_damaged_journal_is_one_line_naming_file_and_line(run_cli, tuned, cmd, kind, where):
    spec, out = tuned
    journal = out / JOURNAL_NAME
    lines = journal.read_bytes().splitlines(keepends=True)
    at = 4 if where == "middle" else len(lines)
    damaged = b"".join(lines[:at]) + DAMAGE[kind][0] + b"".join(lines[at:])
    journal.write_bytes(damaged)
    summary = (out / "summary.json").read_bytes()
    args = ("tune", spec, "--out", str(out), "--quiet", "--trials", "14") if cmd == "tune" else ("report", str(out))
    code, _, err = run_cli(*args)
    assert code == 1 and _one_line(err), err
    assert f"{journal}:{at + 1}: the study journal is damaged" in err and DAMAGE[kind][1] in err
    assert f"head -n {at}" in err and "new --out" in err
    assert journal.read_bytes() == damaged and (out / "summary.json").read_bytes() == summary


def test_a_damaged_journal_named_by_storage_is_one_line(run_cli, tuned, tmp_path):
    spec, out = tuned
    journal = out / JOURNAL_NAME
    journal.write_bytes(b"garbage\n" + journal.read_bytes())
    for args in (("tune", spec, "--out", str(tmp_path / "o2"), "--quiet"), ("report", str(out))):
        code, _, err = run_cli(*args, "--storage", f"journal:{journal}")
        assert code == 1 and _one_line(err) and f"{journal}:1: the study journal is damaged" in err


def test_optunas_own_answers_still_reach_the_caller(tmp_path):
    storage = make_storage(None, tmp_path)
    storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], "a")
    with pytest.raises(optuna.exceptions.DuplicatedStudyError):
        storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], "a")
    trial = storage.create_new_trial(0)
    storage.set_trial_state_values(trial, optuna.trial.TrialState.COMPLETE, [1.0])
    with pytest.raises(optuna.exceptions.UpdateFinishedTrialError):
        storage.set_trial_user_attr(trial, "k", 1)


def test_damage_appended_by_another_process_mid_run_is_reported(tmp_path):
    storage = make_storage(None, tmp_path)
    storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], "a")
    journal = tmp_path / JOURNAL_NAME
    with open(journal, "ab") as f:
        f.write(b"garbage\n")
    with pytest.raises(JournalDamaged, match=f"{JOURNAL_NAME}:2: ") as info:  # nothing is appended after it
        storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], "b")
    assert isinstance(info.value, StorageError) and journal.read_bytes().endswith(b"garbage\n")
    with open(journal, "ab") as f:  # a record after it (Optuna reads past a bad last line only then)
        f.write(b'{"op_code":0,"worker_id":"w","study_name":"c","directions":[1]}\n')
    with pytest.raises(JournalDamaged, match=f"{JOURNAL_NAME}:2: "):
        storage.get_all_studies()


def _study_journal(tmp_path, n: int = 3):
    storage = make_storage(None, tmp_path)
    for i in range(n):
        storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], f"s{i}")
    return tmp_path / JOURNAL_NAME


def test_a_file_that_is_no_journal_at_all_is_called_that(tmp_path):
    """A journal overwritten by pretty JSON (export -o studies.journal) was 'damaged at line 844,
    keep the 843 records before it (head -n 843)', and after that head, at 843, and so on."""
    journal = _study_journal(tmp_path)
    doc = json.dumps({"schema": "autotile.table/1", "entries": [{"a": 1}, {"b": 2}]}, indent=2) + "\n"
    for text in (doc, '{"op": 1}\n'):
        journal.write_text(text)
        for write in (True, False):
            with pytest.raises(JournalDamaged) as info:
                make_storage(None, tmp_path, write=write)
            message = str(info.value)
            assert message.startswith(f"{journal}:1: not a study journal (") and "head -n" not in message
            assert journal.read_text() == text
    journal.write_text(doc)
    assert f"none of its {doc.count(chr(10))} lines is a journal record" in _damage(tmp_path)


def test_damage_at_the_end_names_its_first_line_so_the_advice_opens_the_journal(tmp_path):
    """Lines appended after the records: the first of them is named, and head -n before it opens."""
    journal = _study_journal(tmp_path)
    whole = journal.read_bytes()
    n = whole.count(b"\n")
    journal.write_bytes(whole + b"{\n" + b'  "a": 1\n' + b"}\n")
    message = _damage(tmp_path)
    assert message.startswith(f"{journal}:{n + 1}: the study journal is damaged") and f"head -n {n})" in message
    journal.write_bytes(b"".join(journal.read_bytes().splitlines(keepends=True)[:n]))  # the advice
    assert [s.study_name for s in make_storage(None, tmp_path).get_all_studies()] == ["s0", "s1", "s2"]


def _damage(folder) -> str:
    with pytest.raises(JournalDamaged) as info:
        make_storage(None, folder, write=False)
    return str(info.value)


@pytest.fixture
def tuned_by_two(run_cli, write_spec, tmp_path):
    """(spec, out): a finished run of the tiny elementwise spec by two worker processes."""
    spec, out = write_spec(EW), tmp_path / "out2"
    code, _, err = run_cli("tune", spec, "--out", str(out), "--quiet", "--jobs", "2")
    assert code == 0, err
    assert len({r["worker_id"] for r in _records(out / JOURNAL_NAME)}) > 1  # records of several workers
    return spec, out


def test_records_optuna_would_skip_silently_are_damage(run_cli, tuned_by_two):
    """Deleted middle records, or two journals joined, were replayed as failed trials (exit 0)."""
    spec, out = tuned_by_two
    journal, summary = out / JOURNAL_NAME, (out / "summary.json").read_bytes()
    assert run_cli("report", str(out))[0] == 0  # a journal of several workers is fine
    whole = journal.read_bytes()
    lines = whole.splitlines(keepends=True)
    first_trial = next(i for i, r in enumerate(_records(journal)) if r["op_code"] == 4)
    cut = b"".join(lines[:first_trial] + lines[first_trial + 1:])  # trial ids of later records shift
    for damaged, why in ((cut, "was never created"), (whole + whole, "which had finished")):
        journal.write_bytes(damaged)
        for args in (("tune", spec, "--out", str(out), "--quiet", "--trials", "14"), ("report", str(out))):
            code, _, err = run_cli(*args)
            assert code == 1 and _one_line(err), err
            assert f"{journal}:" in err and "a record Optuna cannot apply" in err and why in err, err
            assert "head -n" in err and journal.read_bytes() == damaged
    assert (out / "summary.json").read_bytes() == summary
    journal.write_bytes(whole)
    assert run_cli("tune", spec, "--out", str(out), "--quiet", "--trials", "14")[0] == 0


def test_records_that_races_of_workers_leave_are_accepted(tmp_path):
    """A study created twice, a stale trial failed by two resumes, a queued trial taken twice."""
    mins = [optuna.study.StudyDirection.MINIMIZE]
    a, b, c = (make_storage(None, tmp_path) for _ in range(3))
    a.create_new_study(mins, "s")
    with pytest.raises(optuna.exceptions.DuplicatedStudyError):
        b.create_new_study(mins, "s")
    stale = a.create_new_trial(0)
    queued = a.create_new_trial(0, optuna.trial.create_trial(state=optuna.trial.TrialState.WAITING))
    assert b.set_trial_state_values(stale, optuna.trial.TrialState.FAIL)
    assert b.set_trial_state_values(queued, optuna.trial.TrialState.RUNNING)
    b.set_trial_state_values(queued, optuna.trial.TrialState.COMPLETE, [1.0])
    with pytest.raises(optuna.exceptions.UpdateFinishedTrialError):  # c had not seen b's records yet
        c._write_log(6, {"trial_id": stale, "state": 4, "values": None, "datetime_complete": "2026-01-01T00:00:00"})
        c._sync_with_backend()
    c._write_log(6, {"trial_id": queued, "state": 1, "values": None, "datetime_start": "2026-01-01T00:00:00"})
    trials = make_storage(None, tmp_path).get_all_trials(0)
    assert [t.state.name for t in trials] == ["FAIL", "COMPLETE"]
