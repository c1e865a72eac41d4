"""See inside a run: every operator's intermediate value, per-operator and per-segment times,
and Chrome trace files.

    model = pyvgf.load("m.vgf")
    cap = pyvgf.debug.capture(model, [x])      # every operator's result, keyed to the model
    cap.dump("intermediates/")                 # one .npy per value and index.json
    prof = pyvgf.debug.profile(model, [x], runs=10)
    print(prof.table())                        # slowest operators first, shares and counts
    prof.write_trace("run.json")               # open in Perfetto or chrome://tracing

To find the operator where two backends part ways, see `pyvgf.testing.bisect`.
"""

from __future__ import annotations

from .capture import Capture, Intermediate, capture
from .profile import Event, Profile, profile

__all__ = ["Capture", "Event", "Intermediate", "Profile", "capture", "profile"]
