//! Harmless standard-library modules a workload may import: `typing`, `os`, `math`, `time`,
//! `random`, `itertools`, `collections`, `dataclasses`, `weakref`, `contextlib`, `logging`,
//! `warnings`, `types` (and `sys`, `functools`, whose used parts live with their features). The
//! attributes that matter to a run are modelled; anything else is rejected where it is
//! used (`os.system`, located). Nothing here touches files, processes, the network or the
//! real clock: `time.time()` is a deterministic clock, `random` CPython's seeded generator
//! (`random_module.rs`), and `os.getenv` sees an empty environment.

use super::interp::{Interpreter, R};
use super::natives::Native;
use crate::heap::{Sym, Value};

/// The stdlib modules that can be imported (beyond torch, gc, asyncio, sys, functools).
pub(super) const MODULES: &[(&str, Native)] = &[
    ("typing", Native::ModTyping),
    ("os", Native::ModOs),
    ("math", Native::ModMath),
    ("time", Native::ModTime),
    ("random", Native::ModRandom),
    ("itertools", Native::ModItertools),
    ("collections", Native::ModCollections),
    ("dataclasses", Native::ModDataclasses),
    ("weakref", Native::ModWeakref),
    ("contextlib", Native::ModContextlib),
    ("logging", Native::ModLogging),
    ("warnings", Native::ModWarnings),
    ("copy", Native::ModCopy),
    ("traceback", Native::ModTraceback),
    ("types", Native::ModTypes),
];

/// Deterministic stand-ins for the clock and the random generator.
pub(super) struct StdlibState {
    /// Seconds since the run began, advanced by each clock read and by `time.sleep`.
    clock: f64,
    /// CPython's Mersenne Twister (`random_module.rs`).
    pub(super) mersenne: super::random_module::Mersenne,
    /// The hidden class of `types.SimpleNamespace` instances (simple_namespace.rs).
    pub(super) namespace_class: Option<crate::heap::ObjId>,
    /// Namespaces whose `repr` is being built (CPython's `Py_ReprEnter`).
    pub(super) repr_active: std::cell::RefCell<Vec<crate::heap::ObjId>>,
    /// Where `_: KW_ONLY` stood among the annotated names of the class body just read.
    pub(super) kw_only_marks: Vec<usize>,
    /// Those marks per class until its decorators have run (python/dataclasses.rs).
    pub(super) kw_only_classes: Vec<(crate::heap::ObjId, Vec<usize>)>,
    /// The hash each user key (an instance with its own `__hash__`) was stored under
    /// (python/user_hash.rs).
    pub(super) key_hashes: rustc_hash::FxHashMap<crate::heap::ObjId, i64>,
    /// Dicts that user keys were stored in (lookups there take the user-key path).
    pub(super) user_key_dicts: rustc_hash::FxHashSet<crate::heap::ObjId>,
    /// User keys checked by `check_dict_key` and their hashes (one `__hash__` call each),
    /// until the store or lookup that follows takes them (`dict(pairs)` checks every key
    /// before it stores any).
    pub(super) probe_hashes: Vec<(Value, i64)>,
    /// An exception a store's `__eq__` raised, for the next dict operation.
    pub(super) key_error: Option<Box<super::interp::Exc>>,
}

impl Default for StdlibState {
    fn default() -> Self {
        StdlibState {
            clock: 0.0,
            mersenne: Default::default(),
            namespace_class: None,
            repr_active: Default::default(),
            kw_only_marks: Vec::new(),
            kw_only_classes: Vec::new(),
            key_hashes: Default::default(),
            user_key_dicts: Default::default(),
            probe_hashes: Vec::new(),
            key_error: None,
        }
    }
}

/// Each clock read moves the deterministic clock on by a millisecond, so that elapsed
/// times are positive.
const CLOCK_TICK: f64 = 1e-3;

/// `module.attr` for the stdlib modules.
pub(super) fn module_attr(module: Native, attr: &str) -> Option<Value> {
    use Native::*;
    let f = |n: Native| Some(Value::Native(n.id()));
    match (module, attr) {
        // Annotations only: any name of `typing` is inert.
        (ModTyping, "NamedTuple") => f(TypingNamedTuple),
        (ModTyping, _) => f(TypingName),
        (ModOs, "getenv") => f(OsGetenv),
        (ModMath, "pi") => Some(Value::Float(std::f64::consts::PI)),
        (ModMath, "e") => Some(Value::Float(std::f64::consts::E)),
        (ModMath, "inf") => Some(Value::Float(f64::INFINITY)),
        (ModMath, "sqrt") => f(MathSqrt),
        (ModMath, "exp") => f(MathExp),
        (ModMath, "log") => f(MathLog),
        (ModMath, "ceil") => f(MathCeil),
        (ModMath, "floor") => f(MathFloor),
        (ModMath, "isfinite") => f(MathIsfinite),
        (ModMath, "isnan") => f(MathIsnan),
        (ModMath, "isinf") => f(MathIsinf),
        (ModMath, "nan") => Some(Value::Float(f64::NAN)),
        (ModMath, "tau") => Some(Value::Float(std::f64::consts::TAU)),
        (ModMath, "cos") => f(MathCos),
        (ModMath, "sin") => f(MathSin),
        (ModMath, "tan") => f(MathTan),
        (ModMath, "tanh") => f(MathTanh),
        (ModMath, "atan") => f(MathAtan),
        (ModMath, "log2") => f(MathLog2),
        (ModMath, "log10") => f(MathLog10),
        (ModMath, "fabs") => f(MathFabs),
        (ModTime, "time" | "perf_counter" | "monotonic") => f(TimeClock),
        (ModTime, "sleep") => f(TimeSleep),
        (ModRandom, "seed") => f(RandomSeed),
        (ModRandom, "random") => f(RandomRandom),
        (ModRandom, "randint") => f(RandomRandint),
        (ModRandom, "uniform") => f(RandomUniform),
        (ModRandom, "choice") => f(RandomChoice),
        (ModRandom, "shuffle") => f(RandomShuffle),
        (ModRandom, "sample") => f(RandomSample),
        (ModContextlib, "nullcontext") => f(NullContext),
        (ModContextlib, "contextmanager") => f(ContextManager),
        (ModContextlib, "suppress") => f(Suppress),
        (ModCollections, "deque") => f(Deque),
        (ModCollections, "defaultdict") => f(DefaultDictFn),
        (ModCollections, "OrderedDict") => f(OrderedDictFn),
        (ModCollections, "Counter") => f(CounterFn),
        (ModWeakref, "ref") => f(WeakrefRef),
        (ModWeakref, "finalize") => f(WeakrefFinalize),
        (ModLogging, "getLogger") => f(GetLogger),
        (
            ModLogging,
            "debug" | "info" | "warning" | "warn" | "error" | "exception" | "critical"
            | "basicConfig" | "setLevel",
        ) => f(Silent),
        (ModLogging, "DEBUG") => Some(Value::Int(10)),
        (ModLogging, "INFO") => Some(Value::Int(20)),
        (ModLogging, "WARNING") => Some(Value::Int(30)),
        (ModLogging, "ERROR") => Some(Value::Int(40)),
        (ModWarnings, "warn" | "filterwarnings" | "simplefilter") => f(Silent),
        (ModCopy, "deepcopy") => f(CopyDeepcopy),
        (ModCopy, "copy") => f(CopyCopy),
        (ModItertools, "chain") => f(ItertoolsChain),
        (ModItertools, "islice") => f(ItertoolsIslice),
        (ModItertools, "count") => f(ItertoolsCount),
        (ModItertools, "repeat") => f(ItertoolsRepeat),
        (ModItertools, "cycle") => f(ItertoolsCycle),
        (ModDataclasses, "dataclass") => f(DataclassesDataclass),
        (ModDataclasses, "field") => f(DataclassesField),
        (ModDataclasses, "fields") => f(DataclassesFields),
        (ModDataclasses, "is_dataclass") => f(DataclassesIsDataclass),
        (ModDataclasses, "asdict") => f(DataclassesAsdict),
        (ModDataclasses, "astuple") => f(DataclassesAstuple),
        (ModDataclasses, "replace") => f(DataclassesReplace),
        (ModDataclasses, "KW_ONLY") => f(DataclassesKwOnly),
        (ModWeakref, "WeakValueDictionary") => f(WeakrefWeakValueDictionary),
        (ModWeakref, "WeakKeyDictionary") => f(WeakrefWeakKeyDictionary),
        (ModWeakref, "WeakSet") => f(WeakrefWeakSet),
        (ModItertools, "starmap") => f(ItertoolsStarmap),
        (ModItertools, "takewhile") => f(ItertoolsTakewhile),
        (ModItertools, "dropwhile") => f(ItertoolsDropwhile),
        (ModItertools, "accumulate") => f(ItertoolsAccumulate),
        (ModItertools, "pairwise") => f(ItertoolsPairwise),
        (ModItertools, "zip_longest") => f(ItertoolsZipLongest),
        (ModItertools, "product") => f(ItertoolsProduct),
        (ModItertools, "combinations") => f(ItertoolsCombinations),
        (ModItertools, "permutations") => f(ItertoolsPermutations),
        (ModTraceback, _) => super::traceback_module::module_attr(attr),
        (ModTypes, "MethodType") => f(TypesMethodType),
        (ModTypes, "SimpleNamespace") => f(TypesSimpleNamespace),
        (ModCollections, "namedtuple") => f(NamedtupleFn),
        _ => None,
    }
}

impl<'a> Interpreter<'a> {
    /// Calls a stdlib function (arguments borrowed).
    pub(super) fn call_stdlib(&mut self, n: Native, p: &[Value], kw: &[(Sym, Value)]) -> R<Value> {
        use Native::*;
        let number = |v: &Value| match v {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Bool(b) => Some(*b as i64 as f64),
            _ => None,
        };
        let x = p.first().and_then(number);
        match n {
            TypingName => Ok(Value::None),
            // A logger behaves as the (silent) module itself.
            GetLogger => Ok(Value::Module(ModLogging.id())),
            Silent => Ok(Value::None),
            OsGetenv => Ok(p.get(1).copied().unwrap_or(Value::None)),
            MathSqrt | MathExp | MathLog | MathCeil | MathFloor | MathIsfinite | MathIsnan
            | MathIsinf | MathCos | MathSin | MathTan | MathTanh | MathAtan | MathLog2
            | MathLog10 | MathFabs => {
                // `math.isnan(t)` and the others take a one-element tensor through
                // `Tensor.__float__` (`.item()`: a host copy, no device allocation).
                let x = match p.first() {
                    Some(&Value::Obj(t)) if x.is_none() && self.is_tensor(Value::Obj(t)) => {
                        match super::tensor_pieces::to_number(self, t, false)? {
                            Value::Float(f) => Some(f),
                            _ => None,
                        }
                    }
                    _ => x,
                };
                let Some(x) = x else {
                    return self.error("TypeError: must be real number");
                };
                Ok(match n {
                    MathSqrt if x < 0.0 => return self.error("ValueError: math domain error"),
                    MathSqrt => Value::Float(x.sqrt()),
                    MathExp => Value::Float(x.exp()),
                    MathLog if x <= 0.0 => return self.error("ValueError: math domain error"),
                    MathLog => match p.get(1).and_then(number) {
                        Some(base) => Value::Float(x.ln() / base.ln()),
                        None => Value::Float(x.ln()),
                    },
                    MathCeil => Value::Int(x.ceil() as i64),
                    MathFloor => Value::Int(x.floor() as i64),
                    MathIsnan => Value::Bool(x.is_nan()),
                    MathCos | MathSin | MathTan if x.is_infinite() => {
                        return self.error("ValueError: math domain error");
                    }
                    MathCos => Value::Float(x.cos()),
                    MathSin => Value::Float(x.sin()),
                    MathTan => Value::Float(x.tan()),
                    MathTanh => Value::Float(x.tanh()),
                    MathAtan => Value::Float(x.atan()),
                    MathLog2 | MathLog10 if x <= 0.0 => {
                        return self.error("ValueError: math domain error");
                    }
                    MathLog2 => Value::Float(x.log2()),
                    MathLog10 => Value::Float(x.log10()),
                    MathFabs => Value::Float(x.abs()),
                    MathIsinf => Value::Bool(x.is_infinite()),
                    _ => Value::Bool(x.is_finite()),
                })
            }
            TimeClock => {
                self.stdlib.clock += CLOCK_TICK;
                Ok(Value::Float(self.stdlib.clock))
            }
            TimeSleep => {
                self.stdlib.clock += x.unwrap_or(0.0).max(0.0);
                Ok(Value::None)
            }
            NullContext => {
                let enter = p
                    .first()
                    .copied()
                    .or_else(|| self.keyword(kw, "enter_result"))
                    .unwrap_or(Value::None);
                self.heap.incref(enter);
                Ok(self.new_wrapper(crate::heap::WrapperKind::NullContext, vec![enter]))
            }
            _ => self.error("TypeError: not a stdlib function"),
        }
    }
}
