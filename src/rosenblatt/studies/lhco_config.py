"""Former name of :mod:`rosenblatt.studies.lhco.config`, kept so that old imports still work."""

import sys

from rosenblatt.studies.lhco import config

sys.modules[__name__] = config
