"""Former name of :mod:`rosenblatt.studies.lhco.report_2d`, kept so that old imports still work."""

import sys

from rosenblatt.studies.lhco import report_2d

sys.modules[__name__] = report_2d
