"""Former name of :mod:`rosenblatt.studies.lhco.report`, kept so that old imports still work."""

import sys

from rosenblatt.studies.lhco import report

sys.modules[__name__] = report
