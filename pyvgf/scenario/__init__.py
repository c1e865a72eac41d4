"""Scenario files: Arm's scenario runner's JSON workloads, parsed, checked and run on pyvgf's HAL.

    plan = pyvgf.scenario.load("s.json", output="out/")    # ScenarioError names the JSON path
    pyvgf.scenario.run(plan, backend="cpu", repeat=1)      # writes each dst .npy as scenario_runner
    pyvgf.scenario.template(vgf, "m.vgf")                  # vgf_dump --scenario-template's dict

See spec/scenario.md for what is supported.
"""

from .execute import ScenarioResult, ScenarioRun, fuzz_target, run
from .parse import ScenarioPlan, load, loads, parse
from .template import template, write_template

__all__ = ["ScenarioPlan", "ScenarioResult", "ScenarioRun", "fuzz_target", "load", "loads", "parse", "run",
           "template", "write_template"]
