//! Compiling calls with `*` or `**` arguments (`f(*a, x, *b, k=1, **kw)`, `o.m(*a)`), run
//! by `eval_call_ex.rs`.
//!
//! CPython compiles them to one positional tuple and one keyword dict and
//! `CALL_FUNCTION_EX` (Python/compile.c `compiler_call_helper`). The operands are evaluated
//! left to right, each `*x` read to its end and each `**m` merged at its turn (3.9+:
//! `LIST_EXTEND`, `DICT_MERGE`; 3.8 reads them all in `BUILD_TUPLE_UNPACK_WITH_CALL` /
//! `BUILD_MAP_UNPACK_WITH_CALL` after the last operand: an approximation on 3.8, as for
//! starred displays). The items and keyword values sit on the value stack above a marker
//! ([`CallExOp::Begin`]); the temporary list, tuple and dicts CPython makes are counted at
//! the call (`eval_call_ex.rs` says which, per version).
//!
//! `o.m(*a)` is `LOAD_ATTR` (a bound method, counted) and the call, not `LOAD_METHOD`.

use super::compile::Compiler;
use super::compile_expr::Op;
use crate::heap::Sym;
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

/// The ops of a call with unpacking (one [`Op::CallEx`] each).
#[derive(Clone, Copy)]
pub(in crate::python) enum CallExOp<'a> {
    /// Marks where the call's arguments start on the value stack; `method` is the name
    /// called on the receiver below it (for error messages).
    Begin { method: Option<Sym> },
    /// Pops a `*` operand and pushes its items; `at` is the `*x` node. A `lone` one (the
    /// only positional argument) stays on the stack: `CALL_FUNCTION_EX` reads it, after
    /// the keywords.
    Spread { at: u32, lone: bool },
    /// The value on top is the keyword argument `name`: a name given twice is an error.
    Keyword { name: Sym, at: u32 },
    /// Pops a `**` operand and pushes its values under their names (`DICT_MERGE`).
    Merge { at: u32 },
    /// Pops the keyword values, the positional items, the marker and the callee (or the
    /// receiver of `method`) and calls it.
    Call {
        call: &'a ast::ExprCall,
        method: Option<Sym>,
    },
}

/// Whether the call unpacks with `*` or `**` (and is not `f(<genexpr>, **kw)`, which
/// stays with the tree evaluator: it refuses it, located).
pub(super) fn has_unpacking(c: &ast::ExprCall) -> bool {
    let args = &c.arguments;
    (args.args.iter().any(Expr::is_starred_expr) || args.keywords.iter().any(|k| k.arg.is_none()))
        && !matches!(&*args.args, [Expr::Generator(_)])
}

impl<'a> Compiler<'a> {
    /// Compiles the callee and the arguments of `c` (see [`has_unpacking`]); returns the
    /// call op, or `None` when a name was not interned (the tree evaluator takes it).
    pub(super) fn call_ex(&mut self, c: &'a ast::ExprCall) -> Option<Op<'a>> {
        let method = match &*c.func {
            Expr::Attribute(a) => Some(super::compile_expr::interned(&a.attr.node_index)?),
            _ => None,
        };
        let mut names = Vec::with_capacity(c.arguments.keywords.len());
        for k in c.arguments.keywords.iter() {
            match &k.arg {
                Some(name) => names.push(Some(super::compile_expr::interned(&name.node_index)?)),
                None => names.push(None),
            }
        }
        match &*c.func {
            Expr::Attribute(a) => self.expr(&a.value),
            f => self.expr(f),
        }
        self.call_ex_op(CallExOp::Begin { method });
        let lone = c.arguments.args.len() == 1;
        for a in c.arguments.args.iter() {
            match a {
                Expr::Starred(s) => {
                    self.expr(&s.value);
                    self.call_ex_op(CallExOp::Spread {
                        at: s.range().start().to_u32(),
                        lone,
                    });
                }
                a => self.expr(a),
            }
        }
        for (k, name) in c.arguments.keywords.iter().zip(names) {
            self.expr(&k.value);
            let at = k.range().start().to_u32();
            self.call_ex_op(match name {
                Some(name) => CallExOp::Keyword { name, at },
                None => CallExOp::Merge { at },
            });
        }
        Some(Op::CallEx(CallExOp::Call { call: c, method }))
    }

    fn call_ex_op(&mut self, op: CallExOp<'a>) {
        self.exprs.push(Op::CallEx(op));
    }
}
