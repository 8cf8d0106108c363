"""Former name of :mod:`rosenblatt.studies.lhco.statistics`, kept so that old imports still work."""

import sys

from rosenblatt.studies.lhco import statistics

sys.modules[__name__] = statistics
