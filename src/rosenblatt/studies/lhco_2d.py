"""Former name of :mod:`rosenblatt.studies.lhco.study_2d`, kept so that old imports still work."""

import sys

from rosenblatt.studies.lhco import study_2d

sys.modules[__name__] = study_2d
