"""Former name of :mod:`rosenblatt.studies.lhco.paper`, kept so that old imports still work."""

import sys

from rosenblatt.studies.lhco import paper

sys.modules[__name__] = paper
