"""Former name of :mod:`rosenblatt.studies.lhco.config_2d`, kept so that old imports still work."""

import sys

from rosenblatt.studies.lhco import config_2d

sys.modules[__name__] = config_2d
