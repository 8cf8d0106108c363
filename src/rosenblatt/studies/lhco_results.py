"""Former name of :mod:`rosenblatt.studies.lhco.results`, kept so that old imports still work."""

import sys

from rosenblatt.studies.lhco import results

sys.modules[__name__] = results
