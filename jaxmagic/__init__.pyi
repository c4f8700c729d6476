# What type checkers and editors see of `import jaxmagic`: every public name with its real type.
# At run time __init__.py loads each name's module when first used (tests/test_loading.py keeps
# the two in step).
from jaxmagic.doctor import PITFALLS as PITFALLS
from jaxmagic.doctor import Diagnosis as Diagnosis
from jaxmagic.doctor import diagnose as diagnose
from jaxmagic.doctor import observe_trace as observe_trace
from jaxmagic.errors import UsageProblem as UsageProblem
from jaxmagic.errors import UserCodeError as UserCodeError
from jaxmagic.recompiles import RecompileEvent as RecompileEvent
from jaxmagic.recompiles import RecompileLimitExceeded as RecompileLimitExceeded
from jaxmagic.recompiles import RecompileLog as RecompileLog
from jaxmagic.recompiles.budget import CompileBudgetExceeded as CompileBudgetExceeded
from jaxmagic.recompiles.budget import expect_compiles as expect_compiles
from jaxmagic.recompiles.causes import Cause as Cause
from jaxmagic.recompiles.collective_budget import CollectiveBudgetExceeded as CollectiveBudgetExceeded
from jaxmagic.recompiles.collective_budget import expect_collectives as expect_collectives
from jaxmagic.recompiles.watch import watch_recompiles as watch_recompiles
from jaxmagic.render.jaxpr import JaxprView as JaxprView
from jaxmagic.timing import Comparison as Comparison
from jaxmagic.timing import Timing as Timing
from jaxmagic.timing import compare as compare
from jaxmagic.timing.stopwatch import CompileCost as CompileCost
from jaxmagic.tracing.call import Call as Call
from jaxmagic.tracing.call import resolve_call as resolve_call
from jaxmagic.tracing.sources import SourceLine as SourceLine
from jaxmagic.tracing.stages import JaxprReport as JaxprReport
from jaxmagic.tracing.stages import trace as trace

__version__: str
__all__: list[str]

def load_ipython_extension(ipython: object) -> None: ...
def unload_ipython_extension(ipython: object) -> None: ...
