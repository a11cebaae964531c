"""The steps of `intercore assess`, each a call into the stage that owns it: the platform model
(or this host's, detected), its channel table, the on-host validation of the channels, the
worst aggressor found for each of the user's critical programs (assess/search.py), the task
set's interference matrix, its region-level form (mitigate/plan/region_matrix.py: the
user's programs' regions measured beside their worst co-runner, assess/regions.py, and
predicted by their heatmaps), Algorithm 1's plan from that, and Solo / Interference /
Protected under that plan. Every measuring step stores its rows in the results store and
records the invocation, so each figure of the dossier leads back to its raw jobs and samples.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from ..base import outputs
from ..base.errors import HostUnsupported, InputError
from ..host.config import value_hash
from ..host.topology import Topology
from ..measure import model_validation as validation
from ..measure.periodic.matrix import InterferenceMatrix
from ..measure.periodic.matrix_runner import canary_for, measure_matrix, store_matrix
from ..measure.periodic.taskset import Task
from ..mitigate.plan import algorithm1, region_matrix
from ..mitigate.experiment import protection as experiment
from ..mitigate.plan.record import CgroupPlan
from ..model import calculus, detect as detect_mod
from ..model.channels import build_table
from ..model.loader import load as load_model
from ..model.platform import Platform
from ..model.sharing import CpuChannels
from . import regions, search
from .steps import Runner, Step
from .system import DETECT, System

PLATFORM_FILE = "platform.yaml"
PROTECTION_DIR = "protection"
Say = Callable[[str], None]


def _result_hash(done: dict[str, dict[str, Any]], step: str) -> str:
    return value_hash(done[step]["result"])


class Pipeline:
    """The steps of one assessment, built one at a time: a step's inputs include the result
    of the steps before it, so it can only be defined once they have run or been read back."""

    def __init__(self, system: System, out: Path, *, db: Path, root: str, topo: Topology,
                 fingerprint: str, argv: list[str], say: Say):
        self.system, self.out, self.db, self.root = system, out, db, root
        self.topo, self.fingerprint, self.argv, self.say = topo, fingerprint, argv, say
        self.platform: Platform | None = system.platform

    def _sizes(self) -> dict[str, Any]:
        return self.system.sizes.model_dump()

    # ---- platform and channels ---------------------------------------------------------------

    def platform_step(self) -> Step:
        given = self.system.platform
        return Step("platform", "detecting this host's platform model" if given is None else
                    f"platform model {given.source}",
                    {"platform": DETECT if given is None else given.hash,
                     "host": self.fingerprint}, self._platform)

    def _platform(self) -> dict[str, Any]:
        if self.system.platform is not None:
            p = self.system.platform
            return {"source": p.source, "sha256": p.hash, "name": p.name, "detected": False}
        path = self.out / PLATFORM_FILE
        outputs.write_text(path, detect_mod.to_yaml(detect_mod.detect()))
        p = load_model(path)
        return {"source": str(path), "sha256": p.hash, "name": p.name, "detected": True}

    def load_platform(self, done: dict[str, dict[str, Any]]) -> Platform:
        """The model the platform step chose; a detected one is read back from its file,
        and must still be the file that step wrote."""
        if self.system.platform is not None:
            return self.system.platform
        result = done["platform"]["result"]
        p = load_model(result["source"])
        if p.hash != result["sha256"]:
            raise InputError(f"changed since the platform step wrote it (sha256 {p.hash[:12]}, "
                             f"not {result['sha256'][:12]}); delete it to detect again",
                             source=result["source"])
        return p

    def channels_step(self, platform: Platform) -> Step:
        def work() -> dict[str, Any]:
            return build_table(calculus.analyze(platform, 2), platform).to_dict()
        return Step("channels", f"interference channels of {platform.name} (k = 2)",
                    {"platform_sha256": platform.hash}, work)

    def validation_step(self, platform: Platform) -> Step:
        sizes = self.system.sizes
        subset = "quick subset" if self.system.quick else "every channel"
        return Step("validation", f"validating the channels on this host ({subset}, "
                    f"{sizes.validation_runs} pairs per trial)",
                    {"platform_sha256": platform.hash, "host": self.fingerprint,
                     "runs": sizes.validation_runs, "quick": self.system.quick},
                    lambda: self._validate(platform))

    def _validate(self, platform: Platform) -> dict[str, Any]:
        """`model validate`'s trials (its quick subset with --quick), or why this host cannot
        run them (a model of another board, a channel no micro-benchmark here reaches)."""
        runs = self.system.sizes.validation_runs
        try:
            found, why_not = validation.exercises(platform, self.topo)
            trials, skipped = validation.plan(build_table(calculus.analyze(platform, 2), platform),
                                              found, why_not, self.topo,
                                              quick=self.system.quick)
            result = validation.validate(trials, self.topo, skipped=skipped, runs=runs,
                                         on_phase=self.say)
        except (InputError, HostUnsupported) as exc:
            return {"refused": getattr(exc, "message", str(exc))}
        invocation = validation.save(self.db, platform, result, runs=runs, argv=self.argv,
                                     topo=self.topo,
                                     params={"quick": self.system.quick, "by": "assess"})
        return {**result.to_dict(), "invocation_id": invocation}

    # ---- the task set ------------------------------------------------------------------------

    def search_step(self) -> Step:
        """The worst aggressor of each critical program of the user's, on this host
        (assess/search.py)."""
        sizes, quick = self.system.sizes, self.system.quick
        found, skipped = search.targets(self.system.taskset, self.system.search_spaces,
                                        self.topo, pairs=sizes.search_pairs)

        def work() -> dict[str, Any]:
            return {"tasks": {t.task: search.search_one(t, pairs=sizes.search_pairs,
                                                        db=self.db, argv=self.argv,
                                                        topo=self.topo, say=self.say)
                              for t in found},
                    "notes": skipped}
        what = (f"worst-aggressor search of {', '.join(t.task for t in found)} "
                f"({len(found[0].candidates)} candidates{', the presets' if quick else ''}, "
                f"{sizes.search_pairs} pairs each in the first round)") if found \
            else "worst-aggressor search: " + "; ".join(skipped)
        return Step("search", what, {**self._taskset_inputs(), "pairs": sizes.search_pairs,
                                     "quick": quick}, work)

    def _taskset_inputs(self) -> dict[str, Any]:
        return {"files": dict(sorted(self.system.task_files.items())), "host": self.fingerprint}

    def matrix_step(self) -> Step:
        sizes = self.system.sizes
        inputs = {**self._taskset_inputs(), "rounds": sizes.matrix_rounds,
                  "block_ns": sizes.matrix_block}
        return Step("matrix", f"interference matrix of {self.system.taskset.name} "
                    f"({sizes.matrix_rounds} round(s) of {sizes.matrix_block / 1e9:g} s blocks, "
                    "running canary)", inputs, self._matrix)

    def _matrix(self) -> dict[str, Any]:
        ts, sizes = self.system.taskset, self.system.sizes
        probe, vcpu, share = canary_for(ts, self.topo)
        started = time.time()
        run = measure_matrix(ts, rounds=sizes.matrix_rounds, block_ns=sizes.matrix_block,
                             canary=probe, canary_cpu=vcpu, can_share=share)
        blocks = [{"label": b.label, "regime": r, "seconds": sizes.matrix_block / 1e9}
                  for (b, _), r in zip(run.blocks, run.regimes)]
        doc: dict[str, Any] = {"matrix": run.matrix.model_dump(mode="json"), "blocks": blocks}
        doc["invocation_id"] = store_matrix(
            self.db, run, ts, command="assess matrix", argv=self.argv,
            params={"taskset": ts.source, "rounds": sizes.matrix_rounds,
                    "block_ns": sizes.matrix_block, "statistic": "max", "seed": 1},
            summary=doc, started_at=started)
        return doc

    def regions_step(self, done: dict[str, dict[str, Any]], platform: Platform) -> Step:
        """The region-level matrix: the measured whole-job matrix joined with the platform
        model's channels (a pair it declares free is checked by its own measurement), each
        critical program's regions measured beside its worst co-runner (assess/regions.py),
        and the critical tasks' heatmaps (their regions' predicted Δ, never below a measured
        one, used where no measurement covers a region)."""
        heatmaps = self.system.heatmaps
        job = InterferenceMatrix.model_validate(done["matrix"]["result"]["matrix"])
        found, skipped = regions.targets(self.system.taskset, job, self.system.sizes.region_runs)

        def work() -> dict[str, Any]:
            measured, notes = regions.measure_targets(found, db=self.db, argv=self.argv,
                                                      topo=self.topo, say=self.say)
            joined = job.model_copy(update={"notes": (*job.notes, *skipped, *notes)})
            return region_matrix.build(self.system.taskset, joined,
                                       channels=CpuChannels(platform), heatmaps=heatmaps,
                                       measured=measured,
                                       job_source="step-matrix.json").model_dump(mode="json")
        inputs: dict[str, Any] = {"matrix": _result_hash(done, "matrix"),
                                  "platform_sha256": platform.hash}
        what = [f"channels of {platform.name}"]
        # Absent, not empty, where unused: a dossier made before them resumes unchanged.
        if heatmaps:
            inputs["heatmaps"] = {task: self.system.files[file]
                                  for task, (file, _) in sorted(heatmaps.items())}
            what.append(f"the heatmaps of {', '.join(heatmaps)}")
        if found:
            inputs["measured"] = {"pairs": [f"{t.task}/{t.beside}" for t in found],
                                  "runs": self.system.sizes.region_runs,
                                  "files": self._taskset_inputs()}
            what.append("the regions of " + ", ".join(f"{t.task} measured beside {t.beside}"
                                                      for t in found))
        return Step("regions", f"region-level matrix ({'; '.join(what)})", inputs, work)

    def plan_step(self, done: dict[str, dict[str, Any]]) -> Step:
        def work() -> dict[str, Any]:
            matrix = InterferenceMatrix.model_validate(done["regions"]["result"])
            return algorithm1.plan(self.system.taskset, matrix, self.system.theta,
                                   matrix_source="step-regions.json").to_dict()
        return Step("plan", f"Algorithm 1 at θ = {self.system.theta:g}, from the region-level "
                    "matrix", {"regions": _result_hash(done, "regions"),
                               "theta": self.system.theta}, work)

    def protection_step(self, done: dict[str, dict[str, Any]]) -> Step:
        inputs = {**self._taskset_inputs(), "plan": _result_hash(done, "plan"),
                  "jobs": self.system.sizes.jobs,
                  "mitigations": list(self.system.mitigations)}
        what = "Solo / Interference / Protected"
        # Absent where no search ran: a dossier made before the step resumes unchanged.
        if "search" in done:
            inputs["search"] = _result_hash(done, "search")
            what += ", and beside the worst aggressor found"
        return Step("protection", f"{what}, {self.system.sizes.jobs} jobs per scenario, per "
                    "critical task", inputs, lambda: self._protection(done))

    def _protection(self, done: dict[str, dict[str, Any]]) -> dict[str, Any]:
        if "freeze" not in self.system.mitigations:
            return {"refused": "freeze is not among the system's allowed mitigations, and it "
                               "is the only one assess applies: nothing was protected"}
        ts = self.system.taskset
        matrix = InterferenceMatrix.model_validate(done["matrix"]["result"]["matrix"])
        plan = CgroupPlan.model_validate(done["plan"]["result"])
        scratch = Path(tempfile.mkdtemp(prefix=".protection-", dir=self.out))
        try:
            scratch.chmod(0o755)  # it becomes DIR/protection, readable as the rest of DIR
            cfg = experiment.Config(jobs=self.system.sizes.jobs, theta=self.system.theta,
                                    root_name=self.root, out_dir=scratch)
            started, results = time.time(), []
            for victim in self.system.critical:
                noise = regions.worst_co_runner(ts, matrix, victim)
                worst, notes = self._worst_found(done, victim)
                beside = replace(ts, tasks=(*ts.tasks, *worst))
                pair = experiment.pair_in(beside, victim, noise, self.topo)
                results.append(experiment.run_pair(
                    victim, pair, cfg, [f"{victim} beside {noise}, its worst best-effort "
                                        "co-runner in the matrix (by the median over its "
                                        "rounds)", *notes],
                    on_phase=self.say, plan=plan, worst=tuple(t.name for t in worst)))
            doc: dict[str, Any] = {"tasks": {r.name: r.to_dict() for r in results}}
            doc["invocation_id"] = experiment.save(
                self.db, results, command="assess protection", argv=self.argv,
                params={"jobs": cfg.jobs, "theta": cfg.theta}, summary=doc, out=scratch,
                started_at=started)
            final = self.out / PROTECTION_DIR
            if final.is_symlink() or final.is_file():
                final.unlink()
            elif final.is_dir():
                shutil.rmtree(final)
            scratch.rename(final)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        for task in doc["tasks"].values():
            task["figures"] = [f"{PROTECTION_DIR}/{Path(p).name}" for p in task["figures"]]
        return doc


    def _worst_found(self, done: dict[str, dict[str, Any]], victim: str
                     ) -> tuple[tuple[Task, ...], list[str]]:
        """The aggressor the search found for `victim`, as tasks to run it beside, and what
        to note of it."""
        found = (done.get("search", {}).get("result", {}).get("tasks", {}).get(victim)
                 or {}).get("found")
        if found is None:
            return (), []
        tasks = search.aggressor_tasks(self.system.taskset, victim, found["aggressor"],
                                       self.topo)
        how = "provisional: the strongest before the search was refused" \
            if found["provisional"] else "the search's winner"
        return tasks, [f"{experiment.WORST_FOUND}: beside {found['aggressor']} ({how}), run "
                       f"as {', '.join(t.name for t in tasks)}, unprotected: the plan has no "
                       "group for an aggressor outside the task set"]


STEPS = ("platform", "channels", "validation", "search", "matrix", "regions", "plan",
         "protection")


def run(pipeline: Pipeline, runner: Runner) -> dict[str, dict[str, Any]]:
    """Every step (STEPS), each defined from what the steps before it produced."""
    done = {"platform": runner(pipeline.platform_step())}
    platform = pipeline.load_platform(done)
    done["channels"] = runner(pipeline.channels_step(platform))
    done["validation"] = runner(pipeline.validation_step(platform))
    done["search"] = runner(pipeline.search_step())
    done["matrix"] = runner(pipeline.matrix_step())
    done["regions"] = runner(pipeline.regions_step(done, platform))
    done["plan"] = runner(pipeline.plan_step(done))
    done["protection"] = runner(pipeline.protection_step(done))
    return done
