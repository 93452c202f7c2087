//! Running calls with `*`/`**` arguments (`compile_call_ex.rs`), and counting the objects
//! CPython makes for them (measured on 3.8.18 – 3.13.0: `harness/tests/vm_call_unpacking.rs`):
//!
//! - positional, 3.9+: a lone `*x` is passed as it is when `x` is a tuple, else made a
//!   tuple (`PySequence_Tuple` in `CALL_FUNCTION_EX`); otherwise a list is built
//!   (`BUILD_LIST`, `LIST_EXTEND`/`LIST_APPEND`) and made a tuple (`LIST_TO_TUPLE`), the
//!   list freed; without `*` the arguments are a `BUILD_TUPLE`, a constant when all are
//!   constants. 3.8: each run of plain arguments is a tuple (constant when folded); two or
//!   more pieces are joined by `BUILD_TUPLE_UNPACK_WITH_CALL` (a list, then the tuple).
//! - keywords: the dicts of `call_unpacking.rs` (`compiler_call_helper`); a call with `*`
//!   and only `name=value` keywords has one dict too.
//! - a Python function called with keywords this way gets them as a new names tuple
//!   (`_PyStack_UnpackDict`), freed when it returns; `o.m(*a)` makes a bound method
//!   (`LOAD_ATTR`), freed after the call (3.8 keeps it on its free list).
//!
//! The final tuple and dict are counted for Python-function callees only: a class or a
//! native receives them as its argument tuple and dict, which its own model counts
//! (`argument_tuple_begin`, `varargs_call_begin`). Approximations: the temporaries are
//! counted at the call, after every operand was evaluated (a collection due in between runs
//! a little later than CPython's); natives without such a model count no tuple.

use super::compile_call_ex::CallExOp;
use crate::heap::{FreeListKind, ObjKind, Sym, Value};
use crate::python::interp::{Interpreter, R};
use crate::python::scope::symbol;
use ruff_python_ast::{self as ast, Expr};
use std::cell::RefCell;

/// A call whose arguments are being gathered on the value stack.
struct Gathering {
    /// Where the marker sits; the positional items start above it.
    marker: usize,
    /// Where the keyword values start, once one is pushed.
    keywords_at: Option<usize>,
    names: Vec<Sym>,
    /// Where the lone `*` operand (still unread, above the marker) is, if there is one.
    lone_at: Option<u32>,
    method: Option<Sym>,
}

thread_local! {
    /// The calls being gathered (nested ones above outer ones); an error that unwinds the
    /// value stack drops those above the base it unwinds to ([`unwound_to`]).
    static CALLS: RefCell<Vec<Gathering>> = const { RefCell::new(Vec::new()) };
}

/// The value stack was unwound to `base` by an error: the calls begun above it are gone.
pub(super) fn unwound_to(base: usize) {
    CALLS.with_borrow_mut(|calls| {
        while calls.last().is_some_and(|c| c.marker >= base) {
            calls.pop();
        }
    });
}

fn top<T>(f: impl FnOnce(&mut Gathering) -> T) -> T {
    CALLS.with_borrow_mut(|calls| f(calls.last_mut().expect("a call being gathered")))
}

/// What a call site makes before the call and frees after it.
#[derive(Default)]
struct Temporaries {
    /// Made and freed before the call (lists joined into the tuple, group dicts).
    lists: usize,
    group_tuples: Vec<usize>,
    group_dicts: usize,
    /// Lives for the call: the argument tuple (its length), the keyword dict.
    tuple: Option<usize>,
    dict: bool,
}

impl<'a> Interpreter<'a> {
    /// Runs one op; returns the value to push, if any.
    pub(super) fn run_call_ex(&mut self, op: CallExOp<'a>) -> R<Option<Value>> {
        match op {
            CallExOp::Begin { method } => {
                let marker = self.expr_stack.len();
                CALLS.with_borrow_mut(|calls| {
                    calls.push(Gathering {
                        marker,
                        keywords_at: None,
                        names: Vec::new(),
                        lone_at: None,
                        method,
                    })
                });
                Ok(Some(Value::None))
            }
            CallExOp::Spread { at, lone } => {
                if lone {
                    top(|g| g.lone_at = Some(at));
                    return Ok(None);
                }
                let iterable = self.expr_stack.pop().expect("a `*` operand");
                self.offset = at;
                if !self.iterable(iterable) {
                    let what = self.value_type_name(iterable);
                    // 3.9+: `LIST_EXTEND`'s message; 3.8 reads it in the call's own check.
                    let text = if self.heap.profile.version.minor >= 9 {
                        "Value".to_string()
                    } else {
                        format!("{}() argument", self.gathered_callee_text())
                    };
                    self.heap.decref(iterable);
                    return self.error(format!(
                        "TypeError: {text} after * must be an iterable, not {what}"
                    ));
                }
                let items = self.collect_items(iterable);
                self.heap.decref(iterable);
                self.expr_stack.extend(items?);
                Ok(None)
            }
            CallExOp::Keyword { name, at } => {
                let at_value = self.expr_stack.len() - 1;
                let duplicate = top(|g| {
                    g.keywords_at.get_or_insert(at_value);
                    let duplicate = g.names.contains(&name);
                    g.names.push(name);
                    duplicate
                });
                if duplicate {
                    self.offset = at;
                    return self.duplicate_keyword(name);
                }
                Ok(None)
            }
            CallExOp::Merge { at } => {
                let mapping = self.expr_stack.pop().expect("a `**` operand");
                self.offset = at;
                let r = self.merge_mapping(mapping);
                self.heap.decref(mapping);
                r.map(|()| None)
            }
            CallExOp::Call { call, method } => self.call_gathered(call, method).map(Some),
        }
    }

    /// `DICT_MERGE`: pushes the values of a `**` dict under their names.
    fn merge_mapping(&mut self, mapping: Value) -> R<()> {
        let at_values = self.expr_stack.len();
        top(|g| {
            g.keywords_at.get_or_insert(at_values);
        });
        let items = match mapping {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Dict(items) => Some(items.clone()),
                ObjKind::Instance { .. } => {
                    return self
                        .unsupported(crate::python::constructs::Construct::DictUnpacking.what());
                }
                _ => None,
            },
            _ => None,
        };
        let Some(items) = items else {
            let what = self.value_type_name(mapping);
            let callee = self.gathered_callee_text();
            return self.error(format!(
                "TypeError: {callee}() argument after ** must be a mapping, not {what}"
            ));
        };
        for (k, v) in items {
            let Value::Str(name) = k else {
                let text = if self.heap.profile.version.minor <= 8 {
                    format!("{}() keywords must be strings", self.gathered_callee_text())
                } else {
                    "keywords must be strings".to_string()
                };
                return self.error(format!("TypeError: {text}"));
            };
            let duplicate = top(|g| {
                let duplicate = g.names.contains(&name);
                g.names.push(name);
                duplicate
            });
            if duplicate {
                return self.duplicate_keyword(name);
            }
            self.heap.incref(v);
            self.expr_stack.push(v);
        }
        Ok(())
    }

    fn duplicate_keyword<T>(&mut self, name: Sym) -> R<T> {
        let callee = self.gathered_callee_text();
        self.error(format!(
            "TypeError: {callee}() got multiple values for keyword argument '{}'",
            self.names.name(name)
        ))
    }

    /// Whether `*v` can be read (`check_args_iterable`: a `__iter__` or a sequence).
    fn iterable(&self, v: Value) -> bool {
        match v {
            Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) => false,
            Value::Dtype(_) | Value::Device(_) | Value::Native(_) | Value::Module(_) => false,
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Function(_) | ObjKind::BoundMethod { .. } => false,
                ObjKind::Instance { class, .. } => {
                    let class = *class;
                    self.torch_class(class).is_some()
                        || ["__iter__", "__getitem__"].iter().any(|n| {
                            self.names
                                .lookup(n)
                                .is_some_and(|s| self.class_lookup(class, s).is_some())
                        })
                }
                _ => true,
            },
            Value::Str(_) | Value::BoundNative(..) => true,
        }
    }

    /// How CPython names the callee being gathered in an argument error: its `__name__` on
    /// 3.8, `module.qualname` from 3.9 (`_PyObject_FunctionStr`).
    fn gathered_callee_text(&mut self) -> String {
        let (marker, method) = top(|g| (g.marker, g.method));
        let callee = self.expr_stack[marker - 1];
        let modern = self.heap.profile.version.minor >= 9;
        let (name, qualname) = match (callee, method) {
            (Value::Obj(id), Some(m)) => {
                let m = self.names.name(m).to_string();
                match self.heap.kind(id) {
                    ObjKind::Instance { class, .. } => {
                        let class = *class;
                        let q = match self.class_qualname(class) {
                            Ok(Value::Str(q)) => self.names.name(q).to_string(),
                            _ => self.class_name(class),
                        };
                        (m.clone(), format!("{q}.{m}"))
                    }
                    _ => (m.clone(), m),
                }
            }
            (Value::Obj(id), None) => match self.heap.kind(id) {
                ObjKind::Function(f) => {
                    let q = self.codes.get(f.code).qualname;
                    (
                        self.names.name(f.name).to_string(),
                        self.codes.qualname(q, &self.names),
                    )
                }
                ObjKind::Class(_) => {
                    let name = self.class_name(id);
                    (name.clone(), name)
                }
                _ => return "function".to_string(),
            },
            _ => return "function".to_string(),
        };
        if modern {
            format!("__main__.{qualname}")
        } else {
            name
        }
    }

    /// The call: pops what was gathered, counts CPython's containers and calls.
    fn call_gathered(&mut self, c: &'a ast::ExprCall, method: Option<Sym>) -> R<Value> {
        let spread_tuple = self.read_lone_operand()?;
        let g = CALLS
            .with_borrow_mut(|calls| calls.pop())
            .expect("a call being gathered");
        let end = self.expr_stack.len();
        let keywords_at = g.keywords_at.unwrap_or(end);
        let values = self.expr_stack.split_off(keywords_at);
        let kwargs: Vec<(Sym, Value)> = g.names.into_iter().zip(values).collect();
        let nk = kwargs.len();
        let args = self.expr_stack.split_off(g.marker + 1);
        self.expr_stack.pop();
        let callee = self.expr_stack.pop().expect("the callee");
        let python = match method {
            None => self.python_function(callee),
            Some(name) => self.python_method(callee, name),
        };
        let t = self.temporaries(c, spread_tuple, args.len(), python);
        // `call_method` itself counts the bound method of a keyword call up to 3.10.
        let method_object = method.is_some()
            && python
            && (kwargs.is_empty() || self.heap.profile.version.minor > 10);
        if method_object && !self.heap.free_list(FreeListKind::Method).pop() {
            self.count_raw(1);
        }
        self.make_temporaries(&t);
        let names_tuple = python && !kwargs.is_empty();
        if names_tuple {
            self.count_tuple(kwargs.len());
        }
        self.at(c);
        let mut call_keywords = std::mem::take(&mut self.call_keywords);
        call_keywords.clear();
        call_keywords.extend(c.arguments.keywords.iter().filter_map(|k| {
            let name = k.arg.as_ref()?;
            let sym = symbol(&name.node_index, name.as_str(), &mut self.names);
            Some((sym, k.range.start().to_u32()))
        }));
        self.call_keywords = call_keywords;
        let r = match method {
            None => self.call(callee, args, kwargs),
            Some(name) => self.call_method(callee, name, args, kwargs),
        };
        if names_tuple {
            self.heap.count_tuple_deallocation(nk);
        }
        self.heap.decref(callee);
        if method_object {
            self.heap.note_gc_del(Some(FreeListKind::Method));
        }
        if let Some(len) = t.tuple {
            self.heap.count_tuple_deallocation(len);
        }
        if t.dict {
            self.heap.count_deallocation(&ObjKind::Dict(Vec::new()));
        }
        r
    }

    /// `CALL_FUNCTION_EX`'s check and read of a lone `*` operand (after the keywords):
    /// replaces it on the stack by its items. Returns whether it was a tuple (passed as it
    /// is). On an error it stays on the stack, released by the unwinding.
    fn read_lone_operand(&mut self) -> R<bool> {
        let Some((marker, at)) = top(|g| g.lone_at.map(|at| (g.marker, at))) else {
            return Ok(false);
        };
        let iterable = self.expr_stack[marker + 1];
        self.offset = at;
        if !self.iterable(iterable) {
            let what = self.value_type_name(iterable);
            let callee = self.gathered_callee_text();
            // Up to 3.11 `CALL_FUNCTION_EX` has popped the keyword dict and never releases
            // it on this error (a leak 3.12 fixed): its values stay alive.
            if self.heap.profile.version.minor <= 11
                && let Some(k) = top(|g| g.keywords_at)
            {
                self.expr_stack.truncate(k);
            }
            return self.error(format!(
                "TypeError: {callee}() argument after * must be an iterable, not {what}"
            ));
        }
        let is_tuple = matches!(iterable, Value::Obj(id)
            if matches!(self.heap.kind(id), ObjKind::Tuple(_)));
        self.heap.incref(iterable);
        let items = self.collect_items(iterable);
        self.heap.decref(iterable);
        let items = items?;
        let n = items.len();
        let rest = self.expr_stack.split_off(marker + 2);
        self.expr_stack.pop();
        self.heap.decref(iterable);
        self.expr_stack.extend(items);
        self.expr_stack.extend(rest);
        top(|g| {
            if let Some(k) = g.keywords_at.as_mut() {
                *k = *k + n - 1;
            }
        });
        Ok(is_tuple)
    }

    /// Whether `callee` is a Python function (or a bound method of one).
    fn python_function(&self, callee: Value) -> bool {
        let Value::Obj(id) = callee else { return false };
        match self.heap.kind(id) {
            ObjKind::Function(_) => true,
            ObjKind::BoundMethod { func, .. } => {
                matches!(self.heap.kind(*func), ObjKind::Function(_))
            }
            _ => false,
        }
    }

    /// Whether `recv.name` is a Python method of `recv`'s class (a bound method for it).
    fn python_method(&self, recv: Value, name: Sym) -> bool {
        let Value::Obj(id) = recv else { return false };
        let ObjKind::Instance { class, .. } = self.heap.kind(id) else {
            return false;
        };
        let class = *class;
        self.instance_attr(id, name).is_none()
            && self.torch_class(class).is_none()
            && matches!(self.class_lookup(class, name), Some(Value::Obj(f))
                if matches!(self.heap.kind(f), ObjKind::Function(_)))
    }

    /// The containers of the module note for this call site.
    fn temporaries(
        &self,
        c: &ast::ExprCall,
        spread_tuple: bool,
        nargs: usize,
        python: bool,
    ) -> Temporaries {
        let minor = self.heap.profile.version.minor;
        let args = &*c.arguments.args;
        let constant = |run: &[Expr]| run.iter().all(crate::python::interp::is_constant);
        let stars = args.iter().filter(|a| a.is_starred_expr()).count();
        let lone_star = matches!(args, [Expr::Starred(_)]);
        let mut t = Temporaries::default();
        if minor >= 9 {
            if lone_star {
                t.tuple = (!spread_tuple).then_some(nargs);
            } else if stars > 0 {
                t.lists = 1;
                t.tuple = Some(nargs);
            } else if !constant(args) {
                t.tuple = Some(nargs);
            }
        } else {
            let runs: Vec<&[Expr]> = args
                .split(Expr::is_starred_expr)
                .filter(|r| !r.is_empty())
                .collect();
            t.group_tuples = runs
                .iter()
                .filter(|r| !constant(r))
                .map(|r| r.len())
                .collect();
            if runs.len() + stars > 1 {
                t.lists = 1;
                t.tuple = Some(nargs);
            } else if lone_star {
                t.tuple = (!spread_tuple).then_some(nargs);
            } else {
                t.tuple = t.group_tuples.pop();
            }
        }
        if t.tuple == Some(0) {
            t.tuple = None; // the empty tuple is a singleton
        }
        let splat: Vec<bool> = c
            .arguments
            .keywords
            .iter()
            .map(|k| k.arg.is_none())
            .collect();
        if !splat.is_empty() {
            let groups = (0..splat.len())
                .filter(|&i| !splat[i] && (i == 0 || splat[i - 1]))
                .count();
            if minor >= 9 {
                t.dict = true;
                t.group_dicts = groups - usize::from(!splat[0]);
            } else if groups + splat.iter().filter(|&&s| s).count() > 1 {
                t.dict = true;
                t.group_dicts = groups;
            } else {
                t.dict = groups == 1;
            }
        }
        if !python {
            t.tuple = None;
            t.dict = false;
        }
        t
    }

    /// Counts the containers made before the call, in CPython's order, and frees the
    /// temporary ones.
    fn make_temporaries(&mut self, t: &Temporaries) {
        let list = ObjKind::List(Vec::new());
        let dict = ObjKind::Dict(Vec::new());
        for &len in &t.group_tuples {
            self.count_tuple(len);
        }
        for _ in 0..t.lists {
            self.count_kind(&list);
        }
        if let Some(len) = t.tuple {
            self.count_tuple(len);
        }
        for _ in 0..t.lists {
            self.heap.count_deallocation(&list);
        }
        for &len in &t.group_tuples {
            self.heap.count_tuple_deallocation(len);
        }
        if self.heap.profile.version.minor >= 9 {
            if t.dict {
                self.count_kind(&dict);
            }
            for _ in 0..t.group_dicts {
                self.count_kind(&dict);
                self.heap.count_deallocation(&dict);
            }
        } else {
            for _ in 0..t.group_dicts {
                self.count_kind(&dict);
            }
            if t.dict {
                self.count_kind(&dict);
            }
            for _ in 0..t.group_dicts {
                self.heap.count_deallocation(&dict);
            }
        }
    }

    fn count_kind(&mut self, kind: &ObjKind) {
        if self.heap.count_allocation(kind) {
            self.collection_due();
        }
    }

    fn count_tuple(&mut self, len: usize) {
        if len > 0 && self.heap.count_tuple_allocation(len) {
            self.collection_due();
        }
    }

    fn count_raw(&mut self, n: u64) {
        if self.heap.count_raw_allocations(n) {
            self.collection_due();
        }
    }
}
