//! The one table of the Python language the workload model runs: which constructs it
//! supports, which only in part, which it refuses, and with what words. The evaluator's
//! rejections take their wording from here ([`Construct::what`]), the static pre-run pass
//! ([`super::static_check`]) decides from here what to report before anything runs, and the
//! README's "Supported Python language" table is checked against it by a test, so the three
//! cannot drift apart.
//!
//! Each row carries an example that runs and, for what is refused, one the pass and the
//! evaluator both refuse; `harness/tests/language_surface.rs` runs every example both ways.

/// Whether the model runs a construct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    Yes,
    /// Some forms run, others are refused (the row says which).
    Partly,
    No,
}

impl Support {
    /// The README's word for it.
    pub fn word(self) -> &'static str {
        match self {
            Support::Yes => "yes",
            Support::Partly => "partly",
            Support::No => "no",
        }
    }
}

/// A row of [`LANGUAGE`], named so that evaluator and pass can refer to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Construct {
    Functions,
    Lambdas,
    Closures,
    Classes,
    ClassDecorators,
    ClassKeywordsOrBases,
    ControlFlow,
    AsyncFunctions,
    AsyncFor,
    AsyncWith,
    Exceptions,
    ExceptStar,
    With,
    Imports,
    Assignments,
    Comprehensions,
    AsyncComprehensions,
    GeneratorExpressions,
    Generators,
    SetDisplays,
    SetComprehensions,
    DictDisplays,
    DictUnpacking,
    Numbers,
    ComplexNumbers,
    Strings,
    BytesLiterals,
    TemplateStrings,
    Subscripts,
    Ellipsis,
    Match,
    TypeAliases,
    IpythonEscapes,
    TracebackModule,
    InstanceDict,
    TypesModule,
    Starred,
    ObjectKeys,
    NamedTuples,
    CounterArithmetic,
    DictValueKeys,
    SuperForms,
    CounterUnary,
    SimpleNamespace,
    SuperAttributes,
    DataclassKwOnly,
    UserHashKeys,
}

/// One construct: what the README says of it, how the model refuses it, and examples.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub key: Construct,
    /// The README's first column.
    pub construct: &'static str,
    pub support: Support,
    /// What the model does differently from CPython, or which forms it refuses ("" when
    /// nothing needs saying).
    pub notes: &'static str,
    /// How a rejection names it: `unsupported: {what}` ("" when it is never refused).
    pub what: &'static str,
    /// A workload that uses it and runs ("" when nothing of it runs).
    pub runs: &'static str,
    /// A workload that uses it where the model refuses it ("" when nothing is refused).
    pub refused: &'static str,
}

impl Construct {
    /// The row of this construct.
    pub fn row(self) -> &'static Row {
        LANGUAGE
            .iter()
            .find(|r| r.key == self)
            .expect("every construct has a row")
    }

    /// The words an `unsupported: ...` error uses for it.
    pub fn what(self) -> &'static str {
        self.row().what
    }

    /// Whether the static pass reports it (the model refuses this form).
    pub fn refused(self) -> bool {
        self.row().support != Support::Yes
    }
}

/// `module.attr` that the model lacks, with a hint at the nearest supported name.
pub fn module_attribute(module: &str, attr: &str, hint: &str) -> String {
    format!("`{module}.{attr}`{hint}")
}

/// `import module` of a module the model lacks.
pub fn import_of(module: &str) -> String {
    format!("importing `{module}`")
}

/// `from module import name` of a name the model lacks.
pub fn import_from(module: &str, name: &str) -> String {
    format!("importing `{name}` from `{module}`")
}

/// The language the workload model runs, row by row (the README's table, in this order).
pub const LANGUAGE: &[Row] = &[
    Row {
        key: Construct::Functions,
        construct: "`def`: defaults (evaluated once), `*args`, `**kwargs`, keyword-only and positional-only parameters, decorators, `f(*xs, **d)`",
        support: Support::Yes,
        notes: "annotations are not evaluated",
        what: "",
        runs: "def f(a, /, b=1, *args, c, **kw):\n    return a + b + c\n@staticmethod\ndef g():\n    pass\nassert f(1, c=2, *[3]) == 6\n",
        refused: "",
    },
    Row {
        key: Construct::Lambdas,
        construct: "`lambda`",
        support: Support::Yes,
        notes: "",
        what: "",
        runs: "f = lambda x, y=2: x * y\nassert f(3) == 6\n",
        refused: "",
    },
    Row {
        key: Construct::Closures,
        construct: "closures, `global`, `nonlocal`",
        support: Support::Yes,
        notes: "",
        what: "",
        runs: "def outer():\n    n = 0\n    def inc():\n        nonlocal n\n        n += 1\n        return n\n    return inc\nassert outer()() == 1\n",
        refused: "",
    },
    Row {
        key: Construct::Classes,
        construct: "`class` with one base or none: methods, `staticmethod`, `classmethod`, `property`, `super()`, special methods",
        support: Support::Yes,
        notes: "`type(x)` is the object's class (`type(x) is C`, `type(x).__name__`, `type(self)(...)`; the builtin types for ints, floats, strings, lists, tuples, dicts, sets and tensors; `type(None)`, CPython's `NoneType`, for `isinstance`); `type(name, bases, dict)` is refused",
        what: "",
        runs: "class A:\n    def __init__(self, x):\n        self.x = x\n    @property\n    def double(self):\n        return 2 * self.x\nclass B(A):\n    def __init__(self):\n        super().__init__(3)\nassert B().double == 6\n",
        refused: "",
    },
    Row {
        key: Construct::ClassDecorators,
        construct: "class decorators",
        support: Support::Yes,
        notes: "evaluated before the body, applied bottom-up; the result is bound to the name",
        what: "a class decorator",
        runs: "def deco(c):\n    c.tag = 1\n    return c\n@deco\nclass A:\n    pass\nassert A.tag == 1\n",
        refused: "",
    },
    Row {
        key: Construct::ClassKeywordsOrBases,
        construct: "class keywords (`metaclass=`) or several bases",
        support: Support::No,
        notes: "",
        what: "class keywords or multiple bases",
        runs: "",
        refused: "class A:\n    pass\nclass B:\n    pass\nclass C(A, B):\n    pass\n",
    },
    Row {
        key: Construct::ControlFlow,
        construct: "`if`, `for`, `while` (with `else`), `break`, `continue`, `pass`, `return`, `assert`, `del`",
        support: Support::Yes,
        notes: "",
        what: "",
        runs: "xs = [1, 2]\nfor x in xs:\n    if x > 1:\n        break\nelse:\n    pass\nwhile False:\n    continue\ndel xs[0]\nassert xs == [2]\n",
        refused: "",
    },
    Row {
        key: Construct::AsyncFunctions,
        construct: "`async def`, `await`, `asyncio.run`",
        support: Support::Partly,
        notes: "coroutines suspend at every `await` of their body, also inside a larger expression (`f(await x)`, `total += await x`, `if await x:`, a `for` iterable, a `with` manager), with the operands evaluated before it held by the frame across the suspension as on CPython; a deterministic event loop runs `asyncio.run`, `create_task`, `gather`, `sleep` (virtual clock) and awaiting tasks; `task.cancel()` raises `asyncio.CancelledError` at the task's `await`, and `asyncio.run` cancels the tasks still pending at shutdown; an `await` behind a short circuit (after `and`/`or`, in a branch of `x if c else y`, a later link of a chained comparison), in an f-string or a `*` unpacking is refused, located; one in a nested scope (a lambda, a comprehension) runs its awaitable to the end and is refused if it would suspend; async generators (`yield` in an `async def`) are iterated by `async for` (their `await`s suspend to the event loop, their `yield`s hand items over; `asend`/`__anext__`/`athrow`/`aclose` awaited by hand and `anext(g[, default])` (3.10+) are awaitable objects counted as CPython counts them, with its reuse and \"already running\" errors; at its end `asyncio.run` closes each unfinished one still alive, as `shutdown_asyncgens()` does; one freed while the loop runs is closed at once, where CPython schedules its `aclose()` for later); `asyncio.Queue(maxsize)` (`put`/`get` wait while full/empty, `put_nowait`/`get_nowait` raise `QueueFull`/`QueueEmpty`, `qsize`/`empty`/`full`, `task_done`/`join`) holds its items in a deque until they are taken and the futures of waiting getters/putters in deques, as CPython's `queues.py`; it completes a waiter's operation when it wakes it (CPython lets the woken task retry), so `qsize()` can differ while a woken task has not run, and `put`/`get` act when called, not when awaited; `asyncio.wait_for(aw, timeout)` runs a coroutine as a task under a timer (as `tasks.py` of 3.8 – 3.11): its result or exception passes through, at the deadline it is cancelled (its `finally` runs, its frame lets go of what it held) and `TimeoutError` is raised, `asyncio.TimeoutError` being its own class before 3.11, chained `from` the inner `CancelledError` from 3.9 (so the caught error keeps the cancelled frame); from 3.12 CPython awaits it in the caller's task under `asyncio.timeout` (the model keeps the task: one loop iteration later per step, and 3.12+ keeping the `CancelledError` until `asyncio.run` ends is not modelled)",
        what: "",
        runs: "async def f(x):\n    await asyncio.sleep(0)\n    return x\nasync def main():\n    return await asyncio.gather(f(1), f(2))\nassert asyncio.run(main()) == [1, 2]\n",
        refused: "",
    },
    Row {
        key: Construct::AsyncFor,
        construct: "`async for`",
        support: Support::Partly,
        notes: "in an `async def` body, over objects whose class defines `__aiter__`/`__anext__`: the coroutine awaits each `__anext__()` (suspending inside it) and `StopAsyncIteration` ends the loop (`else`, `break`, `continue` as in a `for`); also over async generators",
        what: "`async for`",
        runs: "class Two:\n    def __init__(self):\n        self.n = 2\n    def __aiter__(self):\n        return self\n    async def __anext__(self):\n        if self.n == 0:\n            raise StopAsyncIteration\n        self.n -= 1\n        return self.n\nasync def f():\n    out = []\n    async for x in Two():\n        out.append(x)\n    return out\nassert asyncio.run(f()) == [1, 0]\n",
        refused: "",
    },
    Row {
        key: Construct::AsyncWith,
        construct: "`async with`",
        support: Support::Partly,
        notes: "in an `async def` body, over objects whose class defines `__aenter__`/`__aexit__`: both are awaited (the coroutine suspends inside them and the suspended frame holds the manager's exit); an `__aexit__` called with an exception is awaited to its end, refused if it would suspend to the event loop; `break`, `continue` or `return` inside the block awaits `__aexit__(None, None, None)` (a return value waits on the frame's stack until each exit has been awaited)",
        what: "`async with`",
        runs: "class Manager:\n    async def __aenter__(self):\n        return 1\n    async def __aexit__(self, kind, value, tb):\n        return False\nasync def f():\n    async with Manager() as one:\n        got = one\n    return got\nassert asyncio.run(f()) == 1\n",
        refused: "",
    },
    Row {
        key: Construct::Exceptions,
        construct: "`try`/`except`/`else`/`finally`, `raise`, `raise ... from ...`",
        support: Support::Yes,
        notes: "an unsupported construct is not an exception and cannot be caught",
        what: "",
        runs: "try:\n    raise KeyError('k')\nexcept KeyError as e:\n    caught = e\nelse:\n    pass\nfinally:\n    pass\n",
        refused: "",
    },
    Row {
        key: Construct::ExceptStar,
        construct: "`except*`",
        support: Support::No,
        notes: "",
        what: "`except*`",
        runs: "",
        refused: "try:\n    pass\nexcept* ValueError:\n    pass\n",
    },
    Row {
        key: Construct::With,
        construct: "`with`",
        support: Support::Partly,
        notes: "torch's grad modes, `contextlib.nullcontext`, `contextlib.contextmanager` (generator-based: the suspended generator holds its frame during the body), `contextlib.suppress` and objects with `__enter__`/`__exit__`; other managers are refused when they run",
        what: "",
        runs: "with torch.no_grad():\n    pass\n",
        refused: "",
    },
    Row {
        key: Construct::Imports,
        construct: "`import`, `from ... import`",
        support: Support::Partly,
        notes: "of the modelled modules and names only (the PyTorch surface table); anything else is refused before the run",
        what: "",
        runs: "import torch.nn as nn\nfrom torch.optim import SGD\nimport gc\n",
        refused: "import subprocess\n",
    },
    Row {
        key: Construct::Assignments,
        construct: "assignments: to names, attributes, subscripts, tuple unpacking, augmented, annotated, `:=`",
        support: Support::Yes,
        notes: "",
        what: "",
        runs: "a, b = [1, [2, 3]]\nc: int = 1\nc += 1\nif (d := c) == 2:\n    pass\nb[0] = 5\nassert b == [5, 3]\n",
        refused: "",
    },
    Row {
        key: Construct::Comprehensions,
        construct: "list and dict comprehensions",
        support: Support::Yes,
        notes: "",
        what: "",
        runs: "xs = [i * i for i in range(3) if i]\nd = {i: i for i in xs}\nassert xs == [1, 4]\n",
        refused: "",
    },
    Row {
        key: Construct::AsyncComprehensions,
        construct: "`async for` in a comprehension",
        support: Support::No,
        notes: "",
        what: "`async for` in a comprehension",
        runs: "",
        refused: "async def f(xs):\n    return [x async for x in xs]\nasyncio.run(f([]))\n",
    },
    Row {
        key: Construct::GeneratorExpressions,
        construct: "generator expressions",
        support: Support::Partly,
        notes: "as the only argument of `sum`/`any`/`all`/`min`/`max`/`list`/`tuple`/`sorted`/`str.join`/`torch.cat`/`torch.stack`, pulled one item at a time; elsewhere refused",
        what: "a generator expression other than the argument of sum/any/all/min/max/list/tuple/sorted/str.join/torch.cat/torch.stack (needs the workload VM)",
        runs: "assert sum(i for i in range(4)) == 6\n",
        refused: "g = (i for i in range(4))\n",
    },
    Row {
        key: Construct::Generators,
        construct: "generators (`yield`, `yield from`)",
        support: Support::Partly,
        notes: "`yield` and `yield from` in a `def` body's statements and inside larger expressions (`x = f((yield v))`, `total += (yield)`, conditions), with the operands evaluated before it held by the suspended frame, around `if`/`while`/`for`/`try` (with `except`/`else`/`finally`); `next`/`send`/`throw`/`close`; inside `with` (its manager held by the suspended frame, exited on resumption, exception or `close()`); not behind a short circuit, in an f-string or a `*` unpacking; inside a `finally` too; `return`/`break`/`continue` out of a suspending `try`'s `finally` body or a suspending `with` block leave it as CPython's compiler makes them (the exception being handled or the kept return value is discarded, the `with` exit called with `None` x3); async generators: see `async def`; PEP 442 finalisation (`close()` of a generator dropped while suspended in a `try` or `with`) runs when its count reaches zero, at the end of that statement, and for a generator in cyclic garbage (`gc.collect()` runs the finalizers, checks reachability again and clears in the same collection; an automatic collection frees such garbage one collection later)",
        what: "`yield` here (the workload VM suspends at the `yield`s of a `def` or `async def` body; `yield` in a lambda or at module level is not modelled)",
        runs: "def f():\n    x = yield 1\n    yield x\ng = f()\nassert next(g) == 1\nassert g.send(2) == 2\n",
        refused: "f = lambda: (yield 1)\nf()\n",
    },
    Row {
        key: Construct::SetDisplays,
        construct: "set displays (`{a, b}`), `set`, `frozenset`",
        support: Support::Yes,
        notes: "a set's slot layout is CPython's, so iteration and `pop` order match for ints, bools and tuples of them; strings (whose hash CPython randomises per process), floats with a fraction, `None` and objects get stand-in hashes, so their order is deterministic but not CPython's",
        what: "",
        runs: "s = {5, 1, 9, 17, 3, 33}\nassert list(s) == [1, 33, 3, 17, 5, 9]\n",
        refused: "",
    },
    Row {
        key: Construct::SetComprehensions,
        construct: "set comprehensions",
        support: Support::Yes,
        notes: "",
        what: "",
        runs: "s = {i % 2 for i in range(3)}\nassert s == {0, 1}\n",
        refused: "",
    },
    Row {
        key: Construct::DictDisplays,
        construct: "dict displays",
        support: Support::Partly,
        notes: "keys as the rows on objects as dict keys and on keys equal by value say; keys whose class defines `__hash__` are refused when they run",
        what: "",
        runs: "d = {'a': 1, 2: 'b'}\nassert d['a'] == 1\n",
        refused: "",
    },
    Row {
        key: Construct::DictUnpacking,
        construct: "`**` in a dict display",
        support: Support::Partly,
        notes: "the dicts made on the way are CPython's (3.8 `BUILD_MAP_UNPACK`, 3.9+ `DICT_UPDATE`); the operand must be a dict",
        what: "`**` of this object in a dict display",
        runs: "a = {'x': 1}\nb = {**a, 'y': 2}\nassert b == {'x': 1, 'y': 2}\n",
        refused: "",
    },
    Row {
        key: Construct::Numbers,
        construct: "ints, floats, bools, `None`",
        support: Support::Yes,
        notes: "ints are 64-bit: a result beyond that is refused when it is computed",
        what: "",
        runs: "x = 2 ** 10 + 1.5\nassert x == 1025.5 and True and None is None\n",
        refused: "",
    },
    Row {
        key: Construct::ComplexNumbers,
        construct: "complex numbers",
        support: Support::No,
        notes: "",
        what: "complex numbers",
        runs: "",
        refused: "z = 1j\n",
    },
    Row {
        key: Construct::Strings,
        construct: "strings, f-strings, `%` formatting",
        support: Support::Yes,
        notes: "format specs (`{n:>3}`, `{x:.2f}`, `{m:,}`) and conversions (`!r`) in f-strings and `str.format` apply CPython's mini-language to ints, floats, strings and 0-dim tensors; `%` formatting takes flags, width, precision and `%(key)s`; floats print as CPython's shortest repr; `{x=}` writes its source text and the value's `repr()`; nested fields in `str.format` and `{0.attr}`/`{d[k]}` fields are refused",
        what: "",
        runs: "n = 3\ns = f'{n}x' + 'a%d' % n\nassert s == '3xa3'\n",
        refused: "",
    },
    Row {
        key: Construct::BytesLiterals,
        construct: "bytes literals",
        support: Support::No,
        notes: "",
        what: "bytes literals",
        runs: "",
        refused: "b = b'abc'\n",
    },
    Row {
        key: Construct::TemplateStrings,
        construct: "template strings (`t'...'`)",
        support: Support::No,
        notes: "",
        what: "template strings",
        runs: "",
        refused: "",
    },
    Row {
        key: Construct::Subscripts,
        construct: "subscripts and slices, `...` and `None` in a tensor index",
        support: Support::Yes,
        notes: "",
        what: "",
        runs: "xs = [1, 2, 3]\nassert xs[1:] == [2, 3]\nt = torch.zeros(2, 3)\nu = t[..., None]\n",
        refused: "",
    },
    Row {
        key: Construct::Ellipsis,
        construct: "`...` outside a subscript (`def f(): ...`)",
        support: Support::No,
        notes: "",
        what: "`...` outside a subscript",
        runs: "",
        refused: "def f():\n    ...\nf()\n",
    },
    Row {
        key: Construct::Match,
        construct: "`match`",
        support: Support::No,
        notes: "",
        what: "`match` statements",
        runs: "",
        refused: "match 1:\n    case 1:\n        pass\n",
    },
    Row {
        key: Construct::TypeAliases,
        construct: "`type` aliases",
        support: Support::No,
        notes: "",
        what: "`type` aliases",
        runs: "",
        refused: "type Pair = tuple\n",
    },
    Row {
        key: Construct::IpythonEscapes,
        construct: "IPython escapes (`%timeit`, `!ls`)",
        support: Support::No,
        notes: "",
        what: "IPython escape commands",
        runs: "",
        refused: "",
    },
    Row {
        key: Construct::TracebackModule,
        construct: "`traceback`: `format_exc`, `print_exc`, `format_exception`, `print_exception`, `clear_frames`",
        support: Support::Yes,
        notes: "formatting returns the text and prints nothing (chained sections are not rendered); `clear_frames(tb)` clears each returned frame of the traceback, skipping a running one as CPython does, so a kept exception stops pinning tensors",
        what: "",
        runs: "import traceback\ntry:\n    raise ValueError('x')\nexcept ValueError as e:\n    assert traceback.format_exc().endswith('ValueError: x\\n')\n    traceback.clear_frames(e.__traceback__)\n",
        refused: "",
    },
    Row {
        key: Construct::InstanceDict,
        construct: "`vars(obj)`, `obj.__dict__` (read, write through, `.items()`, assigned), `__name__`/`__qualname__`/`__module__` of functions and classes",
        support: Support::Partly,
        notes: "from 3.11 the first read of `__dict__` turns the inline attributes into a dict the instance keeps (from the dict free list, as CPython does); refused (located): `vars()` without an argument, `vars(cls)`/`cls.__dict__` (a mappingproxy), and a class's `__qualname__` when class statements of the same name are nested differently; a function defined inside a comprehension gets 3.12's qualified name on every version",
        what: "",
        runs: "class Box:\n    def __init__(self):\n        self.a = 1\n    def get(self):\n        def inner():\n            pass\n        return inner\nb = Box()\nd = vars(b)\nd['c'] = 3\nassert b.c == 3 and b.__dict__ is d\nassert sorted(d.items()) == [('a', 1), ('c', 3)]\nassert Box.get(b).__qualname__ == 'Box.get.<locals>.inner'\nassert Box.__qualname__ == 'Box' and Box.__module__ == '__main__'\n",
        refused: "",
    },
    Row {
        key: Construct::TypesModule,
        construct: "`types.MethodType(func, obj)`",
        support: Support::Yes,
        notes: "the bound method attribute access makes (stored on its own instance it is a cycle, freed by the collector); other names of `types` are refused where used",
        what: "",
        runs: "import types\nclass Net:\n    pass\ndef forward(self, x):\n    return x + 1\nn = Net()\nn.forward = types.MethodType(forward, n)\nassert n.forward(1) == 2 and n.forward.__self__ is n\n",
        refused: "",
    },
    Row {
        key: Construct::Starred,
        construct: "`*` in assignment and `for` targets (`a, *b = xs`) and in tuple, list and set displays (`[*a, *b]`)",
        support: Support::Yes,
        notes: "the starred target gets a new list (`UNPACK_EX`), a tuple display with a `*` item is built in a list first (`LIST_TO_TUPLE`); the iterator `UNPACK_EX` takes is not allocated",
        what: "",
        runs: "xs = [1, 2, 3, 4]\na, *b, c = xs\nassert b == [2, 3]\nfor k, *rest in [(1, 2), (3,)]:\n    pass\nassert rest == []\nassert (0, *b) == (0, 2, 3) and [*b, *b] == [2, 3, 2, 3] and {*b} == {2, 3}\n",
        refused: "",
    },
    Row {
        key: Construct::ObjectKeys,
        construct: "objects as dict keys (`cache[x] = f(x)` with `x` a tensor, instance or function)",
        support: Support::Partly,
        notes: "instances without their own `__hash__`/`__eq__`, functions, classes, tensors, generators, modules and `None` are keys by identity (a dict keyed by tensors keeps them alive); `list`, `dict`, `set` and instances whose class sets `__eq__` without `__hash__` (alone or in a tuple) raise CPython's `TypeError` (3.14's wording from 3.14); keys whose class defines `__hash__`: see their own row; keys equal by value: see `dict keys equal by value`",
        what: "",
        runs: "import torch\nclass A:\n    pass\na = A()\nx = torch.zeros(2)\nd = {a: 1, x: 2, None: 3}\nassert d[a] == 1 and x in d\ntry:\n    d[[1]] = 4\nexcept TypeError:\n    pass\n",
        refused: "",
    },
    Row {
        key: Construct::NamedTuples,
        construct: "`collections.namedtuple`, `typing.NamedTuple` (class syntax and functional form)",
        support: Support::Partly,
        notes: "instances are GC-tracked tuples that hold their class and fields (indexing, slicing, unpacking, iteration, `len`, equality, ordering, hashing, `repr`, fields by name), never untracked by a collection; `_fields`, `_field_defaults`, `defaults=`, `_make`, `_replace`, `_asdict`; a `NamedTuple` body's defaults, methods and properties, subclasses of either; a call counts its argument tuples and the instance as CPython does; approximations: the class counts as the class object with its `_fields` tuple and `_field_defaults` dict (CPython's `namedtuple()` makes about 30 objects once per class), the frames of the generated methods (≤ 3.10) are not made, and `_replace`'s count follows the tuple free lists the model has; refused where used (located): `rename=`, the tuple methods `count` and `index`, and attribute stores on instances of a subclass without `__slots__` (CPython gives those a `__dict__`)",
        what: "",
        runs: "from collections import namedtuple\nfrom typing import NamedTuple\nP = namedtuple('P', 'x y', defaults=[0])\nclass Batch(NamedTuple):\n    inputs: list\n    weight: float = 1.0\n    def size(self):\n        return len(self.inputs)\np = P(1)\nx, y = p\nassert p == (1, 0) and p.y == 0 and p._replace(y=2)[1] == 2 and p._asdict() == {'x': 1, 'y': 0}\nb = Batch([1, 2])\nassert b.size() == 2 and isinstance(b, tuple) and repr(b) == 'Batch(inputs=[1, 2], weight=1.0)'\n",
        refused: "",
    },
    Row {
        key: Construct::CounterArithmetic,
        construct: "`collections.Counter` arithmetic: `+`, `-`, `|`, `&` and in place",
        support: Support::Partly,
        notes: "the result of `+`, `-`, `|`, `&` is a new Counter (counted as `Counter()` is) holding only positive counts, keys in CPython's order; `+=`, `-=`, `|=`, `&=` change the left Counter and then drop what is not positive, as `Counter.__iadd__` and its siblings do; refused (located): counts that are not ints; unary `+c`/`-c`: see their own row; `elements()` is not modelled",
        what: "",
        runs: "from collections import Counter\nc = Counter(a=3, b=1)\nd = Counter(a=1, b=2, e=1)\nassert c + d == Counter(a=4, b=3, e=1) and c - d == Counter(a=2)\nassert c | d == Counter(a=3, b=2, e=1) and c & d == Counter(a=1, b=1)\nc -= d\nassert c == Counter(a=2)\n",
        refused: "",
    },
    Row {
        key: Construct::DictValueKeys,
        construct: "dict keys equal by value: `1`, `1.0` and `True` as one key, tuples, frozensets, `None`; `[1] in d` and other unhashable keys",
        support: Support::Yes,
        notes: "a lookup tries the same value first, then an equal one (numbers across types, tuples item by item with objects in them by identity, frozensets by members); a store over an equal key keeps the first key and replaces the value, as CPython does; every dict operation (`d[k]`, `d[k] = v`, `k in d`, `get`, `pop`, `setdefault`, `del d[k]`, `dict(pairs)`) raises CPython's `TypeError` for an unhashable key (3.14's wording from 3.14)",
        what: "",
        runs: "d = {1.0: 'a', (1, 2): 'b', None: 'c'}\nd[1] = 'e'\nassert d[True] == 'e' and type(list(d)[0]) is float and d[(1.0, 2)] == 'b'\ndel d[(1, 2.0)]\nassert len(d) == 2 and {frozenset([1, 2]): 0}[frozenset([2, 1])] == 0\ntry:\n    [1] in d\nexcept TypeError:\n    pass\n",
        refused: "",
    },
    Row {
        key: Construct::SuperForms,
        construct: "`super(B, obj)` with `obj` an instance of a subclass, `super(B, cls)` and `super()` in classmethods, unbound `super(B)`",
        support: Support::Yes,
        notes: "lookup after `B` in the object's class chain (one base per class); a `classmethod` found through super gets the class (the receiver itself in a classmethod), a `staticmethod` no receiver; a method looked up through an unbound `super(B)` is CPython's `AttributeError`; a wrong argument is CPython's `TypeError` in each release's words; counted: the super object (and up to 3.10 the type call's argument tuple); approximations: a method calling `super(B, self).f()` counts one object less than CPython 3.8, a classmethod calling `super().m()` one more than 3.9/3.10; `super(B).__get__` is not modelled; attribute reads other than calls: see `super().attr` read as a value",
        what: "",
        runs: "class A:\n    def f(self):\n        return 'A'\n    @classmethod\n    def make(cls):\n        return cls.__name__\nclass B(A):\n    @classmethod\n    def make(cls):\n        return super().make() + super(B, cls).make()\nclass C(B):\n    def f(self):\n        return super(B, self).f()\nassert C().f() == 'A' and C.make() == 'CC'\ntry:\n    super(B).f()\nexcept AttributeError:\n    pass\n",
        refused: "",
    },
    Row {
        key: Construct::CounterUnary,
        construct: "`collections.Counter` unary `+c` and `-c`",
        support: Support::Partly,
        notes: "a new Counter of the positive counts (`+c`) or of the negative counts negated (`-c`), keys in the operand's order; approximation: counted as `Counter()` is, while CPython's `__pos__`/`__neg__` loop also makes a `dict_items` view and its iterator (measured: two objects more than `Counter()` on 3.9 – 3.15, one on 3.8); refused (located): counts that are not ints",
        what: "",
        runs: "from collections import Counter\nc = Counter(a=3, b=-1)\nassert +c == Counter(a=3) and -c == Counter(b=1)\n",
        refused: "",
    },
    Row {
        key: Construct::SimpleNamespace,
        construct: "`types.SimpleNamespace(**kwargs)`: attributes read, stored and deleted, `vars()`, `__dict__`, `==`, `repr`, `type`, `isinstance`",
        support: Support::Partly,
        notes: "GC-tracked, with its own `__dict__` made at creation (counted: the namespace, its dict, and the call's keyword dict, as CPython counts them on 3.8 – 3.15); `==` compares the dicts of two namespaces, unhashable as CPython's (`TypeError` naming `types.SimpleNamespace`), `repr` prints `namespace(...)` for one already being printed; 3.13+'s positional dict is taken (before 3.13 CPython's `TypeError`); refused (located): a positional iterable of pairs; `str()`, `print` and f-strings print its `repr`; not modelled: subclassing `SimpleNamespace`",
        what: "",
        runs: "import types\ncfg = types.SimpleNamespace(lr=0.1, steps=2)\ncfg.name = 'run'\ndel cfg.steps\nassert vars(cfg) == {'lr': 0.1, 'name': 'run'} and cfg == types.SimpleNamespace(lr=0.1, name='run')\nassert repr(cfg) == \"namespace(lr=0.1, name='run')\" and isinstance(cfg, types.SimpleNamespace)\n",
        refused: "",
    },
    Row {
        key: Construct::SuperAttributes,
        construct: "`super().attr` read as a value: class attributes, properties, methods (`init = super().__init__`), classmethods and staticmethods",
        support: Support::Partly,
        notes: "looked up after the defining class and bound as `super_getattro` binds it: a method becomes a bound method of the receiver (the plain function for `super(B, cls)`), a classmethod binds the class, a property runs its getter; an unbound `super(B)` and a missing name are CPython's `AttributeError`; counted as CPython 3.11 – 3.15 count it (the super object made and freed, the bound method kept); approximation: up to 3.10 the model's super object keeps its fields in an instance dict, one object more per `super()` than CPython; refused (located): a name only `object`, a torch class or an exception class would supply (`super().__repr__`)",
        what: "",
        runs: "class A:\n    tag = 'a'\n    @property\n    def size(self):\n        return 10\n    def f(self):\n        return 1\nclass B(A):\n    def get(self):\n        return super().tag, super().size, super().f\nt, s, f = B().get()\nassert t == 'a' and s == 10 and f() == 1\n",
        refused: "",
    },
    Row {
        key: Construct::DataclassKwOnly,
        construct: "`dataclasses.KW_ONLY` (`_: KW_ONLY` in a dataclass body)",
        support: Support::Partly,
        notes: "the pseudo-field is no field (not in `fields()`, not an `__init__` parameter); the fields after it are keyword-only unless their `field(kw_only=False)` says otherwise; before 3.10 CPython's `ImportError` (raised where the class is decorated, not at the import); refused (located): two `KW_ONLY` pseudo-fields in one class",
        what: "",
        runs: "from dataclasses import dataclass, KW_ONLY\n@dataclass\nclass Config:\n    lr: float\n    _: KW_ONLY\n    steps: int = 10\nc = Config(0.1, steps=3)\nassert c.steps == 3\ntry:\n    Config(0.1, 3)\nexcept TypeError:\n    pass\n",
        refused: "",
    },
    Row {
        key: Construct::UserHashKeys,
        construct: "instances whose class defines `__hash__`/`__eq__` as dict keys and set members",
        support: Support::Partly,
        notes: "`__hash__` is called once per insert or lookup (and by `hash()`; a result of `-1` is `-2`) and its result kept with the entry; `__eq__` (the stored key's, else the probe's) only on an entry of equal kept hash that is not the probe itself; the frames of those calls are counted as any call's; `__hash__ = None`, a class whose own `__eq__` comes without `__hash__` (a dataclass with `eq` and without `frozen`) and a `__hash__` returning a non-int raise CPython's `TypeError` (3.14's words from 3.14); approximations: a key keeps the hash of its last store (CPython's is per entry), colliding entries are compared in insertion order, set `==` and merges of one set into another (`|`, `update`, `set(s)`) compare user keys by identity, and an exception raised by `__eq__` during a store is raised by the next dict or set operation; refused (located): a tuple holding such an instance, and a frozen dataclass (its generated `__hash__`) as a key or member",
        what: "",
        runs: "class K:\n    def __init__(self, v):\n        self.v = v\n    def __hash__(self):\n        return self.v % 2\n    def __eq__(self, other):\n        return self.v == other.v\nd = {K(1): 'a'}\nd[K(3)] = 'b'\nassert d[K(1)] == 'a' and len(d) == 2 and K(3) in {K(1), K(3)}\nclass N:\n    __hash__ = None\ntry:\n    {N(): 1}\nexcept TypeError:\n    pass\n",
        refused: "",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_construct_has_one_row_and_every_refused_one_its_words() {
        for row in LANGUAGE {
            assert_eq!(
                LANGUAGE.iter().filter(|r| r.key == row.key).count(),
                1,
                "{:?}",
                row.key
            );
            assert_eq!(
                row.support == Support::No,
                row.runs.is_empty(),
                "{:?}: a supported construct has an example that runs, a refused one none",
                row.key
            );
        }
        assert_eq!(Construct::Match.what(), "`match` statements");
        assert!(Construct::TypeAliases.refused());
        assert!(!Construct::SetDisplays.refused());
        assert!(!Construct::Lambdas.refused());
    }
}
