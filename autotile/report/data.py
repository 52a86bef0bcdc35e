"""What a report reads: the summary, the hardware profile and (if it can be opened) the storage.

Nothing here writes: the storage is opened only when it exists, and studies are only loaded.

>>> band(85.0)
'good'
>>> shape_label({"m": 16, "n": 32})
'm=16, n=32'
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from autotile.atomic import pending
from autotile.errors import InputError
from autotile.hardware import HardwareProfile, load_profile

BANDS = ("excellent", "good", "acceptable", "room left")
URL_PREFIXES = ("sqlite:", "postgresql:", "postgresql+", "mysql:", "mysql+", "journal:")


def band(pct: float | None) -> str:
    """The utilization band of the seed talks: >90 excellent, 80-90 good, 70-80 acceptable."""
    if pct is None or pct != pct:
        return "-"
    if pct > 90.0:
        return "excellent"
    if pct >= 80.0:
        return "good"
    return "acceptable" if pct >= 70.0 else "room left"


def shape_label(shape: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items())


def slug(r: dict) -> str:
    """A file-name-safe name of one result: ``m1024_n2048_k512_fp16_cube``."""
    dims = "_".join(f"{k}{v}" for k, v in r["shape"].items())
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in f"{dims}_{r['dtype']}_{r['unit']}")


def result_label(r: dict, *, unit: bool = True) -> str:
    """``m=1024, n=2048, k=512 fp16`` (plus `` cube`` when ``unit``)."""
    return f"{shape_label(r['shape'])} {r['dtype']}" + (f" {r['unit']}" if unit else "")


@dataclass
class ReportData:
    """A finished run: its summary, the profile it ran on and its studies (when reachable)."""

    out_dir: Path
    summary: dict
    hw: HardwareProfile | None
    storage: object | None = None
    storage_url: str = ""  # the storage this report opened, as a --storage URL (redacted)
    storage_note: str = ""
    _studies: dict = field(default_factory=dict)
    _foreign: dict = field(default_factory=dict)  # study name -> what changed (``foreign``)

    @property
    def storage_text(self) -> str:
        """The storage this report opened, as the report names it (a journal by its path)."""
        url = self.storage_url
        return url[len("journal:"):] if url.startswith("journal:") else url

    @cached_property
    def recorded(self) -> tuple[object | None, str]:
        """(the spec this run recorded, or None; why not): see :func:`recorded_spec`."""
        return recorded_spec(self.out_dir, self.summary)

    @property
    def spec(self):
        """The run's own spec (table.json's copy), never the spec file on disk; None if unavailable."""
        return self.recorded[0]

    @property
    def replayed(self) -> bool:
        """Whether the run replayed recorded measurements: no simulation, so no utilization or bound.
        Summaries before ``backend`` tell it by their verification, skipped for replay."""
        if self.summary.get("backend") is not None:
            return self.summary["backend"] == "replay"
        return any(str((r.get("verification") or {}).get("skipped", "")).startswith("replay")
                   for r in self.results)

    @property
    def keeps_storage(self) -> bool:
        """Whether the run kept its trials in an Optuna storage: the exhaustive sampler simulates
        every configuration in one batch and keeps none (summaries before that said a journal)."""
        return self.summary.get("sampler") != "exhaustive"

    @property
    def hw_label(self) -> str:
        """The run's profile as headers name it (``label_of``): an edited copy of a bundled
        profile that kept its name reads ``ascend910b2-<8 hex>``, not as the shipped chip."""
        from autotile.hardware.profile import label_of

        name = self.summary.get("hw")
        return label_of(name, self.summary.get("hw_hash")) if name else "?"

    @property
    def hw_shipped(self) -> bool:
        """Whether the run's profile is a bundled one as shipped (by its recorded hash)."""
        from autotile.hardware.profile import is_shipped

        name = self.summary.get("hw")
        return bool(name) and is_shipped(name, self.summary.get("hw_hash"))

    @cached_property
    def hw_argument(self) -> tuple[str | None, str]:
        """(the ``--hw`` of commands that run this run's profile, None for the default profile;
        a note, or ""). A bundled profile as shipped goes by its name, any other by its file, as
        an absolute path (the commands work from any folder): summary.json's ``hw_path``, or for
        a summary written before it, the spec's ``hardware:`` read from the spec's folder when
        that file holds the run's profile. A file that has changed since is named with a note; a
        profile whose file is unknown gets a placeholder naming it, never its name (an edited
        copy keeps the bundled name, and a custom name is no --hw)."""
        from autotile.hardware.profile import DEFAULT_PROFILE, file_placeholder

        s = self.summary
        name, want = s.get("hw") or DEFAULT_PROFILE, s.get("hw_hash")
        if self.hw_shipped or not s.get("hw"):
            return (None if name == DEFAULT_PROFILE else name), ""
        path, recorded = s.get("hw_path"), True
        if not path:
            path, recorded = self._spec_profile_file(), False
        now = _hash_of(path) if path else None
        if path and now is not None and want in (now, None):  # None: a summary without the hash
            return path, ""
        if path and recorded:
            if now is None:
                return path, (f"The commands pass the profile file {path}, which no longer loads: give --hw a "
                              f"file of this run's profile (content hash {want}).")
            return path, (f"The commands pass the profile file {path}, edited since this run (hash {now} now, "
                          f"{want} then): they run what it holds now.")
        return file_placeholder(name, want), ""

    @cached_property
    def spec_note(self) -> str:
        """That the spec file the Reproduce command passes (summary.json's ``spec``) is gone or has
        changed since this run (its content hash, as tune records it, is not ``spec_hash``), or ""."""
        from autotile.space.loader import load_spec

        path, then = self.summary.get("spec"), self.summary.get("spec_hash")
        if not isinstance(path, str) or not isinstance(then, str):
            return ""
        where = f"The Reproduce section's autotile tune command passes the spec file {path}"
        restore = "table.json records the run's spec (its spec.content)"
        if not Path(path).is_file():
            return f"{where}, which no longer exists: the command fails until it is back; {restore}."
        try:
            spec = load_spec(path)
        except Exception as exc:  # noqa: BLE001 - any spec that no longer loads: say why, keep the report
            return f"{where}, which no longer loads ({exc}): the command fails until it is mended; {restore}."
        if spec.content_hash() == then:
            return ""
        what = "whose hardware profile changed" if spec.hardware.content_hash() != self.summary.get("hw_hash") \
            else "edited"
        return (f"{where}, {what} since this run (hash {spec.content_hash()} now, {then} then): it tunes what the "
                "file holds now, and refuses a stored study whose trials depend on what changed (params, "
                "constraints, inputs, objectives, limits, profile; --restart deletes such studies).")

    def _spec_profile_file(self) -> str | None:
        """The profile file the run's spec names (``hardware:``, read from the spec's folder), or None."""
        spec, spec_path = self.spec, self.summary.get("spec")
        ref = getattr(spec, "hardware_ref", None)
        if not isinstance(ref, str) or not isinstance(spec_path, str):
            return None
        if not (ref.endswith((".yaml", ".yml")) or "/" in ref):
            return None
        return os.path.normpath(os.path.join(os.path.dirname(spec_path), ref))

    @property
    def results(self) -> list[dict]:
        return self.summary.get("results", [])

    @property
    def exported(self) -> list[dict]:
        """The results a table exports: per (shape, dtype), the chosen unit's."""
        return [r for r in self.results if r.get("chosen", True) and r.get("cycles") is not None]

    @cached_property
    def searched(self) -> list[dict]:
        """The results with their search record (``SEARCH_FIELDS``: trial counts, history, portfolio
        members, Pareto front) read from the storage where it holds the study, else summary.json's.
        The outcome (best configuration, verification: what table.json exports) stays summary.json's."""
        objectives = self.summary.get("objectives") or ["cycles"]
        out = []
        for r in self.results:
            study = self.study(r.get("study"))
            out.append(r | stored_search(study, objectives) if study is not None else r)
        return out

    @property
    def mismatch_note(self) -> str:
        """What summary.json says that the storage contradicts (trial counts, best value), or ""."""
        diffs = []
        for r, s in zip(self.results, self.searched):
            if s is r:
                continue
            was, now = min(r.get("history") or [math.inf]), min(s.get("history") or [math.inf])
            text = f"{result_label(r)}: {r.get('trials', '?')} trials in summary.json, {s['trials']} in the storage"
            if was != now:
                text += f", best {_best_text(was)} against {_best_text(now)}"
            if r.get("trials") != s["trials"] or was != now:
                diffs.append(text)
        if not diffs:
            return ""
        return ("summary.json does not match the study storage (it was written before trials were added to the "
                "studies, or by another run): " + "; ".join(diffs) + ". The search sections (optimization history, "
                "portfolio members, parameter importance, Pareto front) show the storage; the best "
                "configurations, unit choice, verification, budget and table.json are summary.json's. Run the "
                "Reproduce section's autotile tune command again to refresh them from the storage.")

    def study(self, name: str):
        """The Optuna study ``name`` from the storage, or None: also when the study under that name
        is another spec's (``foreign``), which is not this run's search."""
        if self.storage is None or not name:
            return None
        if name not in self._studies:
            import optuna

            try:
                study = optuna.load_study(study_name=name, storage=self.storage)
            except Exception:  # noqa: BLE001 - a study missing from this storage
                study = None
            if study is not None and (why := self._not_this_run(name, study.user_attrs)):
                self._foreign[name], study = why, None
            self._studies[name] = study
        return self._studies[name]

    def _not_this_run(self, name: str, attrs: dict) -> str:
        """What changed when the study ``name`` records another identity than this run's, else "".
        The run's is the digest summary.json records; for a summary before it, tune's own check
        (``identity.mismatch``) against the recorded spec's. A study without one is taken as is."""
        from autotile.tune import identity

        r = next((r for r in self.results if r.get("study") == name), None)
        if r is None or identity.IDENTITY_ATTR not in attrs:
            return ""
        want = r.get("identity")
        if want is not None and identity.recorded_digest(attrs) == want:
            return ""
        mine, stored = self._identity(r, attrs[identity.IDENTITY_ATTR]), attrs[identity.IDENTITY_ATTR]
        if want is None:
            return (identity.mismatch(attrs, mine) or "") if mine is not None else ""
        changed = identity.changes(stored, mine) if isinstance(stored, dict) and mine is not None else []
        return ", ".join(changed) + " changed" if changed else \
            f"identity {identity.recorded_digest(attrs)}, not this run's {want}"

    def _identity(self, r: dict, stored) -> dict | None:
        """The identity of result ``r``'s study from the recorded spec, with ``stored``'s simulator (a
        study is this run's whatever autotile changed since); None when it cannot be had."""
        from autotile.tune import identity

        if self.spec is None:
            return None
        try:
            mine = identity.identity(self.spec.space(r["shape"], r["dtype"], r["unit"]),
                                     self.summary.get("objectives") or ["cycles"])
        except Exception:  # noqa: BLE001 - a spec this autotile no longer reads (or its measurements gone)
            return None
        if isinstance(stored, dict) and "simulator" in stored:
            mine["simulator"] = stored["simulator"]
        return mine

    @property
    def foreign(self) -> dict:
        """{study name: what changed} of the studies the storage holds under this run's names that
        another spec tuned since: not this run's search (``study`` gives None for them)."""
        _ = self.searched  # loads every study, and so finds them
        return self._foreign

    @property
    def foreign_note(self) -> str:
        """That the storage now holds another spec's study under a name of this run's, or ""."""
        if not self.foreign:
            return ""
        names = "; ".join(f"{n} ({why})" for n, why in self.foreign.items())
        return (f"The study storage now holds another spec's study under the name of this run's: {names}. Another "
                "spec tuned it after this run (`autotile tune --restart` deletes the study it replaces), so the "
                "search sections show summary.json's record of this run's search, not that study. The Reproduce section's "
                "autotile tune command is refused there (the storage holds trials of a different spec).")


SEARCH_FIELDS = ("trials", "complete", "unique_configs", "infeasible", "failed", "infeasible_pct",
                 "history", "history_trials", "members", "pareto")


def _best_text(v: float) -> str:
    return "none" if v == math.inf else f"{v:,.6g}"


def stored_search(study, objectives) -> dict:
    """A study's ``SEARCH_FIELDS`` as ``autotile tune`` summarizes them (``runner.summarize``),
    from the trials its storage holds now."""
    from optuna.trial import TrialState

    from autotile.tune.portfolio import MEMBER_ATTR, member_stats
    from autotile.tune.runner import CONFIG_ATTR

    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    infeasible = sum(1 for t in trials if t.state == TrialState.PRUNED)
    out = {"trials": len(trials), "complete": len(complete),
           "unique_configs": len({t.user_attrs.get(CONFIG_ATTR, t.number) for t in complete}),
           "infeasible": infeasible, "failed": sum(1 for t in trials if t.state == TrialState.FAIL),
           "infeasible_pct": round(100.0 * infeasible / len(trials), 1) if trials else 0.0,
           "history": [t.values[0] for t in complete], "history_trials": [t.number for t in complete],
           "members": member_stats(trials) if any(MEMBER_ATTR in t.system_attrs for t in trials) else None,
           "pareto": None}
    if len(objectives) > 1 and complete:
        front, seen = [], set()
        for t in sorted(study.best_trials, key=lambda t: t.number):
            key = t.user_attrs.get(CONFIG_ATTR)
            if key not in seen:
                seen.add(key)
                front.append({"params": json.loads(key) if key else t.params,
                              "values": dict(zip(objectives, t.values)), "trial": t.number})
        out["pareto"] = front
    return out


def recorded_spec(out_dir: Path, summary: dict) -> tuple[object | None, str]:
    """(spec, "") from the copy table.json embeds, if its hash is summary.json's ``spec_hash``;
    else (None, why). The spec file may have moved or changed since the run: it is not read."""
    from autotile.tables.schema import load_table

    try:
        spec = load_table(out_dir / "table.json").spec
    except Exception as exc:  # noqa: BLE001 - any unreadable table: say why, keep the report
        return None, f"table.json, which records the run's spec, cannot be used: {exc}"
    if spec.content_hash() != summary.get("spec_hash"):
        return None, (f"table.json records a spec of hash {spec.content_hash()}, not this run's "
                      f"{summary.get('spec_hash')} (summary.json)")
    return spec, ""


def load(out_dir: str | Path, storage: str | None = None) -> ReportData:
    """Read ``out_dir/summary.json``; open ``storage`` (URL), else the journal in ``out_dir``."""
    out_dir = Path(out_dir)
    path = out_dir / "summary.json"
    try:
        summary = json.loads(pending(path).read_text(encoding="utf-8"))  # a tune writing its set
    except FileNotFoundError:
        raise InputError(f"{path}: no summary.json (run `autotile tune SPEC --out {out_dir}` first)") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
    except RecursionError:  # nested thousands deep: the decoder recurses once per level
        raise InputError(f"{path}: not valid JSON (nesting too deep)") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not isinstance(summary, dict) or not isinstance(summary.get("results"), list):
        raise InputError(f"{path}: not an autotile summary (no results list)")
    check_summary(summary, path)
    # absolute, like the spec and storage paths a run records: the Reproduce commands then work
    # from any folder, and no relative path is read against another one
    data = ReportData(out_dir=Path(os.path.abspath(out_dir)), summary=summary, hw=None)
    data.hw = _profile(data)
    _open_storage(data, storage)
    return data


def _profile(data: ReportData) -> HardwareProfile | None:
    """The profile the run used: the copy table.json embeds (with the recorded spec), else the
    named profile as it is now (the report says when its hash no longer matches the run's)."""
    summary = data.summary
    if data.spec is not None and data.spec.hardware.content_hash() == summary.get("hw_hash"):
        return data.spec.hardware
    for ref in (summary.get("hw_path"), summary.get("hw")):  # the run's file, else its name
        try:
            return load_profile(ref) if ref else None
        except Exception:  # noqa: BLE001 - a custom profile file that has moved
            continue
    return None


def _hash_of(path: str) -> str | None:
    """The content hash of the profile file at ``path``, None when it cannot be loaded."""
    try:
        return load_profile(path).content_hash()
    except Exception:  # noqa: BLE001 - missing, unreadable or no longer a valid profile
        return None


_NUM = (int, float)
# field -> (accepted types, what the message says); None is accepted for every optional field
_TOP = {"op": ((str,), "an op name", True), "hw": ((str,), "a hardware profile name or path", False),
        "hw_path": ((str,), "the hardware profile file's path", False),
        "objectives": ((list,), "a list of objective names", False), "spec": ((str,), "the spec path", False),
        "storage": ((str,), "a storage URL or path", False), "interrupted": ((bool,), "true or false", False),
        "timeout_s": (_NUM, "a number of seconds", False),
        "backend": ((str,), "a backend name", False), "not_run": ((list,), "a list", False),
        "verify": ((bool,), "true or false", False), "warm_start": ((bool,), "true or false", False),
        "jobs": ((int,), "a number of worker processes", False)}
_RESULT = {"shape": ((dict,), "an object of dimension sizes", True), "dtype": ((str,), "a dtype name", True),
           "unit": ((str,), "a unit name", True), "study": ((str,), "a study name", False),
           "identity": ((str,), "a study identity digest", False),
           "cycles": (_NUM, "a number", False), "pct_of_peak": (_NUM, "a number", False),
           "pct_of_bandwidth": (_NUM, "a number", False), "speedup_vs_baseline": (_NUM, "a number", False),
           "baseline_cycles": (_NUM, "a number", False), "optimum_cycles": (_NUM, "a number", False),
           "optimum": (_NUM, "a number", False),
           "time_us": (_NUM, "a number", False), "params": ((dict,), "an object", False),
           "baseline_params": ((dict,), "an object", False), "baseline_values": ((dict,), "an object", False),
           "values": ((dict,), "an object", False), "msprof": ((dict,), "an object", False),
           "verification": ((dict,), "an object", False), "history": ((list,), "a list", False),
           "history_trials": ((list,), "a list", False),
           "members": ((list,), "a list", False), "infeasible_reasons": ((list,), "a list", False), "rejected": ((list,), "a list", False),
           "gate": ((dict,), "an object", False),
           "pareto": ((list,), "a list", False), "verified": ((bool,), "true or false", False),
           "chosen": ((bool,), "true or false", False), "bound": ((str,), "a string", False),
           "interrupted": ((bool,), "true or false", False), "cap_reached": ((bool,), "true or false", False),
           "space_exhausted": ((bool,), "true or false", False), "feasible_configs": ((int,), "an integer", False),
           "trials": ((int,), "an integer", False), "complete": ((int,), "an integer", False),
           "unique_configs": ((int,), "an integer", False)}


def check_summary(summary: dict, path: Path) -> None:
    """The fields the report reads have the types ``autotile tune`` writes (else one InputError)."""
    from autotile.kernels import registry

    def check(obj: dict, fields: dict, where: str) -> None:
        for key, (types, what, required) in fields.items():
            v = obj.get(key)
            if v is None and not required:
                continue
            if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
                raise InputError(f"{path}: {where}{key}: expected {what}, got {json.dumps(v)[:40]}")

    _check_schema(summary, path)
    check(summary, _TOP, "")
    try:
        info = registry.get(summary["op"])
    except KeyError:
        raise InputError(f"{path}: op: expected one of {', '.join(registry.OPS)}, got {summary['op']!r}") from None
    for i, r in enumerate(summary["results"]):
        if not isinstance(r, dict):
            raise InputError(f"{path}: results[{i}]: expected an object, got {json.dumps(r)[:40]}")
        check(r, _RESULT, f"results[{i}].")
        if r.get("cycles") is not None and r.get("params") is None:  # a result's configuration
            raise InputError(f"{path}: results[{i}].params: expected the configuration (an object) of a "
                             f"result with cycles, got {json.dumps(r.get('params'))}")
        if not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in r["shape"].items()):
            raise InputError(f"{path}: results[{i}].shape: expected integer sizes, got {json.dumps(r['shape'])[:40]}")
        if r["unit"] not in info.units:
            raise InputError(f"{path}: results[{i}].unit: expected one of {', '.join(info.units)}, got {r['unit']!r}")
        if r["dtype"] not in info.dtypes:
            raise InputError(f"{path}: results[{i}].dtype: expected one of {', '.join(info.dtypes)}, got {r['dtype']!r}")
    for i, r in enumerate(summary.get("not_run") or []):
        if not isinstance(r, dict):
            raise InputError(f"{path}: not_run[{i}]: expected an object, got {json.dumps(r)[:40]}")
        check(r, {k: _RESULT[k] for k in ("shape", "dtype", "unit")}, f"not_run[{i}].")
    for i, o in enumerate(summary.get("objectives") or []):
        if not isinstance(o, str):
            raise InputError(f"{path}: objectives[{i}]: expected an objective name, got {json.dumps(o)[:40]}")


SUMMARY_SCHEMA = "autotile.summary/1"


def _check_schema(summary: dict, path: Path) -> None:
    """The summary schema this autotile writes; a newer one is refused as tables refuse theirs
    (its fields may mean something else), not rendered as if it were this one."""
    from autotile import __version__

    schema = summary.get("schema")
    name, _, version = schema.rpartition("/") if isinstance(schema, str) else ("", "", "")
    if name != "autotile.summary" or not version.isdigit():
        raise InputError(f"{path}: schema: expected {SUMMARY_SCHEMA!r}, got {json.dumps(schema)[:40]}")
    if schema != SUMMARY_SCHEMA:
        newer = int(version) > int(SUMMARY_SCHEMA.rpartition("/")[2])
        raise InputError(f"{path}: schema: " + (
            f"summary schema {schema} is newer than this autotile {__version__} reads ({SUMMARY_SCHEMA}); "
            "upgrade autotile" if newer else f"expected {SUMMARY_SCHEMA!r}, got {schema!r}"))


def _missing_file(url: str) -> bool:
    """Whether ``url`` names a journal or SQLite file that does not exist (opening would create it)."""
    from autotile.tune.storage import sqlite_file

    path = url[len("journal:"):] if url.startswith("journal:") else sqlite_file(url)
    return path is not None and not Path(path).exists()


def _open_storage(data: ReportData, url: str | None) -> None:
    from autotile.tune.storage import JOURNAL_NAME, absolute_url, make_storage, redact

    recorded = str(data.summary.get("storage") or "")
    given = url is not None
    if not data.keeps_storage:  # a journal in the folder is another run's
        if given:
            raise InputError("--storage: this run used the exhaustive sampler, which keeps no study storage; "
                             "drop --storage")
        return
    journal = data.out_dir / JOURNAL_NAME
    if url is None:
        if journal.exists():
            url = f"journal:{journal}"
        elif recorded.startswith(URL_PREFIXES) and not _missing_file(recorded):
            url = recorded  # (a missing file is not created: it would hold none of the run's trials)
        elif recorded and not recorded.startswith(URL_PREFIXES) and Path(recorded).exists():
            url = f"journal:{recorded}"
        else:
            also = f", nor is {redact(recorded)}, which the run recorded" if recorded else ""
            data.storage_note = (f"The study storage was not found ({JOURNAL_NAME} is not in {data.out_dir}{also}); "
                                 "sections that need every trial are left out. Pass --storage URL to use another.")
            return
    else:  # the user's own --storage: it must open, and a report creates nothing
        if _missing_file(url):
            raise InputError(f"--storage {redact(url)}: no such "
                             + ("journal file" if url.startswith("journal:") else "SQLite file"))
        url = absolute_url(url)  # the Reproduce command must name it from any folder
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data.storage = make_storage(url, data.out_dir, write=False)
        data.storage_url = redact(url)
    except InputError as exc:
        if given:
            raise
        data.storage_note = f"The study storage could not be opened: {exc}"
