//! Compiling expressions to instructions for a stack of values (`eval_expr.rs` runs them).
//!
//! Design. Each expression operand of a plain instruction (an expression statement, an
//! assignment's value, a `return` value, an `if`/`while` test, a `for` loop's iterable)
//! becomes an [`ExprCode`]: a range of [`Op`]s in the body's pool (`VmCode::exprs`,
//! compiled once per code object with the body) in postfix order. They run on one value
//! stack of the interpreter (`Interpreter::expr_stack`): every frame's expression
//! temporaries sit there above the base its evaluation started at, and an error unwinds
//! them, top first, to that base (CPython's stack unwinding; the tree walker leaked the
//! left operand of a binary operation whose right operand raised).
//!
//! Operands are resolved at compile time: constants are the values themselves (ints,
//! floats, bools, `None`, interned strings: nothing to allocate or incref), names and
//! attribute names are the symbols `scope::intern_identifiers` interned once per module
//! (no string hashing when they run). In function bodies, name loads are resolved to their
//! scope once the body is compiled ([`resolve_names`]): a local is its frame slot
//! (`Code::varnames`), a global or builtin is looked up in the module's table only; module
//! and class bodies load through `Interpreter::load_name`. Their name stores (`x = v`,
//! unpacking to names, `for` targets, `x op= v`, `del x`) are resolved to slots the same way
//! (`store_fast.rs`: [`Op::StoreFast`], [`Op::DeleteFast`]).
//!
//! Temporaries are created and released exactly where the tree walker created and
//! released them (the `gc_schedule_*` and `calibration` tests check CPython's order):
//! operands are evaluated left to right and pushed, an operator pops them, runs the same
//! interpreter routine the walker ran (`binary`, `get_attr`, `call`, `call_method`, …) and
//! releases them in the walker's order. Calls go through the call machinery
//! (`interp/calls.rs`): only the argument evaluation and the call site are compiled.
//!
//! Forms compiled: names, constants, attribute loads, calls (positional and keyword,
//! `f(...)` and `obj.m(...)`), binary and unary operators, single comparisons, `and`/`or`,
//! conditional expressions, subscripts (the container and the index's operands:
//! `compile_subscript.rs`), tuple and list displays without `*`; `compile_expr_more.rs` compiles more forms ([`Op::More`]).
//! Every other form falls back to the tree evaluator through [`Op::EvalTree`], the one
//! greppable fallback.

use super::compile::{Compiler, Instr};
use crate::heap::{Sym, Value};
use ruff_python_ast::{self as ast, CmpOp, Expr, Operator, UnaryOp};
use ruff_text_size::Ranged;

/// Resolves the name loads of a function body's compiled expressions to its scopes, as
/// CPython's compiler emits `LOAD_FAST`, `LOAD_DEREF` or `LOAD_GLOBAL`: running them
/// hashes no scope table. Only for function bodies: module and class bodies look names
/// up by name (their namespaces are dictionaries).
pub(in crate::python) fn resolve_names(ops: &mut [Op<'_>], code: &crate::python::scope::Code<'_>) {
    use crate::python::scope::NameScope;
    for op in ops {
        if let Op::LoadName { name, at } = *op {
            *op = match code.scopes.get(&name) {
                Some(&NameScope::Local(slot)) => Op::LoadFast { slot, name, at },
                Some(NameScope::Cell | NameScope::Free) => Op::LoadDeref { name, at },
                Some(NameScope::Global) | None => Op::LoadGlobal { name, at },
            };
        }
        if let Op::Comp(super::compile_comp::CompOp::Begin { comp, closure }) = op {
            *closure = super::compile_comp::closure_size(*comp, &code.scopes);
        }
    }
}

/// A compiled expression: `root` (the node, for locations and loop keys) and its ops
/// `start..end` in `VmCode::exprs`.
#[derive(Clone, Copy)]
pub(in crate::python) struct ExprCode<'a> {
    pub(in crate::python) root: &'a Expr,
    pub(in crate::python) start: u32,
    pub(in crate::python) end: u32,
}

/// One expression instruction. `at` is the offset of the node (the error location the tree
/// walker set before the same operation).
#[derive(Clone, Copy)]
pub(in crate::python) enum Op<'a> {
    /// The fallback: the tree evaluator evaluates this node and the result is pushed.
    /// `depth` is the node's nesting below the compiled root, so that the evaluator's depth
    /// guard counts it as if the whole expression were walked.
    EvalTree {
        e: &'a Expr,
        depth: u32,
    },
    /// Pushes a constant (no reference to take).
    Const(Value),
    /// Pushes the value of a name.
    LoadName {
        name: Sym,
        at: u32,
    },
    /// Pushes a function's plain local by slot ([`resolve_names`]); `name` for the error.
    LoadFast {
        slot: u32,
        name: Sym,
        at: u32,
    },
    /// Pushes a function's cell or free variable.
    LoadDeref {
        name: Sym,
        at: u32,
    },
    /// Pushes a global or builtin of a function body.
    LoadGlobal {
        name: Sym,
        at: u32,
    },
    /// Replaces the object on top with its attribute.
    LoadAttr {
        attr: Sym,
        at: u32,
    },
    /// Pops the right then the left operand, pushes the result.
    Binary {
        op: Operator,
        at: u32,
    },
    Unary {
        op: UnaryOp,
        at: u32,
    },
    /// A comparison with one operator.
    Compare {
        op: CmpOp,
        at: u32,
    },
    /// `and`/`or`: the value on top decides; short-circuiting keeps it and jumps to
    /// `target` (an index into the pool), otherwise it is dropped.
    ShortCircuit {
        or: bool,
        target: u32,
    },
    /// Pops the test and jumps to `target` when it is false.
    JumpIfFalse {
        target: u32,
    },
    Jump {
        target: u32,
    },
    /// A subscript's op (`compile_subscript.rs`, run by `eval_subscript.rs`).
    Subscript(super::compile_subscript::SubscriptOp<'a>),
    /// Pops `len` items into a new tuple (`BUILD_TUPLE`) or list (`BUILD_LIST`).
    BuildTuple {
        len: u32,
    },
    BuildList {
        len: u32,
    },
    /// `f(args, k=v)`: the callee, the positional arguments, then the keyword values are
    /// on the stack; `call` is the node (keyword names, the call site).
    Call {
        call: &'a ast::ExprCall,
    },
    /// `receiver.name(args, k=v)`: the receiver, then the arguments (`LOAD_METHOD`/`CALL`).
    CallMethod {
        name: Sym,
        call: &'a ast::ExprCall,
    },
    /// A form compiled by `compile_expr_more.rs` (run by `eval_expr_more.rs`).
    More(super::compile_expr_more::MoreOp<'a>),
    /// A form compiled by `compile_defs.rs` (run by `eval_defs.rs`): lambdas, and the
    /// parts of `def` and `class` statements.
    Defs(super::compile_defs::DefOp<'a>),
    /// Pops the value on top into a function's plain local (`STORE_FAST`), releasing the
    /// value it replaces after the store (`store_fast.rs` resolves these).
    StoreFast {
        slot: u32,
    },
    /// Unbinds a function's plain local and releases its value (`DELETE_FAST`); `name`
    /// and `at` for the error when it is unbound.
    DeleteFast {
        slot: u32,
        name: Sym,
        at: u32,
    },
    /// A comprehension's op (`compile_comp.rs`, run by `eval_comp.rs`).
    Comp(super::compile_comp::CompOp<'a>),
    /// A call with `*`/`**` arguments (`compile_call_ex.rs`, run by `eval_call_ex.rs`).
    CallEx(super::compile_call_ex::CallExOp<'a>),
}

/// A plain instruction whose expression operand is compiled: the same statement or step as
/// the [`Instr`] of the same name, its operand run by `Interpreter::eval_compiled`.
#[derive(Clone, Copy)]
pub(in crate::python) enum Compiled<'a> {
    ExprStmt(&'a ast::Stmt, ExprCode<'a>),
    Assign(&'a ast::Stmt, &'a ast::StmtAssign, ExprCode<'a>),
    Return(&'a ast::Stmt, ExprCode<'a>),
    ReturnValue(&'a ast::Stmt, ExprCode<'a>),
    JumpIfFalse(ExprCode<'a>, u32),
    WhileTest {
        test: ExprCode<'a>,
        exit: u32,
        depth: u32,
    },
    LoopIter {
        iter: ExprCode<'a>,
        depth: u32,
    },
    /// A simple statement compiled by `compile_stmt.rs` (run by `eval_stmt.rs`).
    Stmt(super::compile_stmt::StmtCode<'a>),
    /// A name store, unpacking or `del` of names resolved to a function's slots
    /// (`store_fast.rs`).
    Fast(super::store_fast::FastCode<'a>),
}

/// Sub-expressions nested deeper than this are left to the tree evaluator (whose depth
/// guard rejects absurd nesting, located) so that compiling never recurses deeply.
const MAX_COMPILED_DEPTH: u32 = 200;

/// The symbol `scope::intern_identifiers` stored in a node, if any.
pub(super) fn interned(index: &ruff_python_ast::AtomicNodeIndex) -> Option<Sym> {
    index.load().as_u32().map(Sym)
}

fn at(node: &impl Ranged) -> u32 {
    node.range().start().to_u32()
}

impl<'a> Compiler<'a> {
    /// Gives the plain instructions from `from` on compiled expression operands.
    pub(super) fn compile_operands(&mut self, from: usize) {
        for i in from..self.instrs.len() {
            let compiled = match self.instrs[i] {
                Instr::ExprStmt(s, e) => Compiled::ExprStmt(s, self.expr_code(e)),
                Instr::AssignStmt(s, a) if !is_pair_assignment(a) => {
                    Compiled::Assign(s, a, self.expr_code(&a.value))
                }
                Instr::ReturnStmt(s, Some(e)) => Compiled::Return(s, self.expr_code(e)),
                Instr::ReturnValue(s, Some(e)) => Compiled::ReturnValue(s, self.expr_code(e)),
                Instr::JumpIfFalse(e, target) => Compiled::JumpIfFalse(self.expr_code(e), target),
                Instr::WhileTest { test, exit, depth } => Compiled::WhileTest {
                    test: self.expr_code(test),
                    exit,
                    depth,
                },
                Instr::LoopIter { iter, depth } => Compiled::LoopIter {
                    iter: self.expr_code(iter),
                    depth,
                },
                _ => continue,
            };
            self.instrs[i] = Instr::Compiled(compiled);
        }
    }

    pub(super) fn expr_code(&mut self, e: &'a Expr) -> ExprCode<'a> {
        let start = self.exprs.len() as u32;
        self.expr(e);
        ExprCode {
            root: e,
            start,
            end: self.exprs.len() as u32,
        }
    }

    pub(super) fn here_op(&self) -> u32 {
        self.exprs.len() as u32
    }

    pub(super) fn expr(&mut self, e: &'a Expr) {
        self.expr_depth += 1;
        self.expr_node(e);
        self.expr_depth -= 1;
    }

    fn fallback(&self, e: &'a Expr) -> Op<'a> {
        Op::EvalTree {
            e,
            depth: self.expr_depth - 1,
        }
    }

    fn expr_node(&mut self, e: &'a Expr) {
        if self.expr_depth > MAX_COMPILED_DEPTH {
            self.exprs.push(self.fallback(e));
            return;
        }
        let op = match e {
            Expr::Name(n) => match interned(&n.node_index) {
                Some(name) => Op::LoadName { name, at: at(n) },
                None => self.fallback(e),
            },
            Expr::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => match i.as_i64() {
                    Some(v) => Op::Const(Value::Int(v)),
                    None => self.fallback(e),
                },
                ast::Number::Float(f) => Op::Const(Value::Float(*f)),
                ast::Number::Complex { .. } => self.fallback(e),
            },
            Expr::StringLiteral(s) => match interned(&s.node_index) {
                Some(sym) => Op::Const(Value::Str(sym)),
                None => self.fallback(e),
            },
            Expr::BooleanLiteral(b) => Op::Const(Value::Bool(b.value)),
            Expr::NoneLiteral(_) => Op::Const(Value::None),
            Expr::Attribute(a) => match interned(&a.attr.node_index) {
                Some(attr) => {
                    self.expr(&a.value);
                    Op::LoadAttr { attr, at: at(a) }
                }
                None => self.fallback(e),
            },
            Expr::Call(c) => match self.call(c) {
                Some(op) => op,
                None => self.fallback(e),
            },
            Expr::BinOp(b) => {
                self.expr(&b.left);
                self.expr(&b.right);
                Op::Binary {
                    op: b.op,
                    at: at(b),
                }
            }
            Expr::UnaryOp(u) => {
                self.expr(&u.operand);
                Op::Unary {
                    op: u.op,
                    at: at(u),
                }
            }
            Expr::Compare(c) if c.ops.len() == 1 => {
                self.expr(&c.left);
                self.expr(&c.comparators[0]);
                Op::Compare {
                    op: c.ops[0],
                    at: at(c),
                }
            }
            Expr::BoolOp(b) => return self.bool_op(b),
            Expr::If(i) => return self.conditional(i),
            Expr::Subscript(s) => self.subscript(s),
            Expr::Tuple(t)
                if !t.elts.iter().any(Expr::is_starred_expr)
                    && !t.elts.iter().all(crate::python::interp::is_constant) =>
            {
                t.elts.iter().for_each(|x| self.expr(x));
                Op::BuildTuple {
                    len: t.elts.len() as u32,
                }
            }
            Expr::List(l) if !l.elts.iter().any(Expr::is_starred_expr) => {
                l.elts.iter().for_each(|x| self.expr(x));
                Op::BuildList {
                    len: l.elts.len() as u32,
                }
            }
            _ if self.expr_more(e) => return,
            _ if self.expr_defs(e) => return,
            _ if self.expr_comp(e) => return,
            _ => self.fallback(e),
        };
        self.exprs.push(op);
    }

    /// A call whose arguments the compiled path evaluates: no `*`/`**` unpacking and not a
    /// lone generator-expression argument (those stay with the tree evaluator).
    fn call(&mut self, c: &'a ast::ExprCall) -> Option<Op<'a>> {
        if super::compile_call_ex::has_unpacking(c) {
            return self.call_ex(c);
        }
        let args = &c.arguments;
        if args.args.iter().any(Expr::is_starred_expr)
            || matches!(&*args.args, [Expr::Generator(_)])
            || args.keywords.iter().any(|k| k.arg.is_none())
        {
            return None;
        }
        let op = match &*c.func {
            Expr::Attribute(a) => {
                let name = interned(&a.attr.node_index)?;
                self.expr(&a.value);
                Op::CallMethod { name, call: c }
            }
            f => {
                self.expr(f);
                Op::Call { call: c }
            }
        };
        args.args.iter().for_each(|a| self.expr(a));
        args.keywords.iter().for_each(|k| self.expr(&k.value));
        Some(op)
    }

    fn bool_op(&mut self, b: &'a ast::ExprBoolOp) {
        let or = matches!(b.op, ast::BoolOp::Or);
        let mut jumps = Vec::new();
        for (i, value) in b.values.iter().enumerate() {
            self.expr(value);
            if i + 1 < b.values.len() {
                jumps.push(self.exprs.len());
                self.exprs.push(Op::ShortCircuit { or, target: 0 });
            }
        }
        let end = self.here_op();
        for j in jumps {
            self.exprs[j] = Op::ShortCircuit { or, target: end };
        }
    }

    fn conditional(&mut self, i: &'a ast::ExprIf) {
        self.expr(&i.test);
        let test = self.exprs.len();
        self.exprs.push(Op::JumpIfFalse { target: 0 });
        self.expr(&i.body);
        let skip = self.exprs.len();
        self.exprs.push(Op::Jump { target: 0 });
        self.exprs[test] = Op::JumpIfFalse {
            target: self.here_op(),
        };
        self.expr(&i.orelse);
        self.exprs[skip] = Op::Jump {
            target: self.here_op(),
        };
    }
}

/// `a, b = x, y` (up to three names): `exec_assign` stores without building a tuple.
fn is_pair_assignment(a: &ast::StmtAssign) -> bool {
    matches!((a.targets.as_slice(), &*a.value), ([Expr::Tuple(t)], Expr::Tuple(v))
        if t.elts.len() == v.elts.len() && t.elts.len() <= 3)
}
