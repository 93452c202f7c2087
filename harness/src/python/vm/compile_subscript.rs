//! Subscripts compiled (run by `eval_subscript.rs`): the index is evaluated by compiled ops
//! like any operand, and `natives::subscript` and its store and delete siblings receive the
//! evaluated [`crate::python::natives::Index`].
//!
//! - `obj[index]` in an expression: the container, then the index's operands left to right
//!   (a slice's bounds, `None` where omitted; a tuple's items), then [`SubscriptOp::Load`]
//!   (`BINARY_SUBSCR`, or 3.12+'s `BINARY_SLICE`: same calls, see `natives/subscript_index.rs`
//!   for the slice object).
//! - Statements ([`SubStmt`]): `obj[i] = v` with one target (the value, the container, the
//!   index, `STORE_SUBSCR`), `obj[i] op= v` (container and index once, `__getitem__`, the
//!   value, the in-place operator, `__setitem__`: `DUP_TOP_TWO`/`COPY 2`), `obj[i]: T = v`
//!   and `obj[i]: T` (the container and index evaluated and dropped when there is no value;
//!   the annotation evaluated after the store in module and class bodies, as CPython's
//!   `compiler_annassign` does for a non-simple target), and `del` of any mix of names,
//!   attributes and subscripts, target by target.

use super::compile::{Compiler, Instr};
use super::compile_expr::{Compiled, ExprCode, Op};
use super::compile_stmt::StmtCode;
use crate::heap::Sym;
use crate::python::natives::{part_width, written_parts};
use ruff_python_ast::{self as ast, Expr, Operator, Stmt};
use ruff_text_size::Ranged;

/// A subscript op of an expression ([`Op::Subscript`]).
#[derive(Clone, Copy)]
pub(in crate::python) enum SubscriptOp<'a> {
    /// Pops the index's `width` operands and the container, pushes `container[index]`.
    Load {
        index: &'a Expr,
        width: u32,
        at: u32,
    },
}

/// A subscript's container and index, compiled.
#[derive(Clone, Copy)]
pub(in crate::python) struct Target<'a> {
    /// The subscript node (error locations).
    pub(in crate::python) node: &'a Expr,
    pub(in crate::python) obj: ExprCode<'a>,
    /// Leaves the index's operands (see [`SubscriptOp::Load`]); its root is the index node.
    pub(in crate::python) index: ExprCode<'a>,
}

/// One target of a compiled `del`.
#[derive(Clone, Copy)]
pub(in crate::python) enum DelTarget<'a> {
    Name(&'a Expr),
    Attr {
        node: &'a Expr,
        obj: ExprCode<'a>,
        attr: Sym,
    },
    Item(Target<'a>),
}

/// A compiled statement with a subscript target ([`StmtCode::Subscript`]).
#[derive(Clone, Copy)]
pub(in crate::python) enum SubStmt<'a> {
    Assign {
        stmt: &'a Stmt,
        value: ExprCode<'a>,
        target: Target<'a>,
    },
    Aug {
        stmt: &'a Stmt,
        op: Operator,
        target: Target<'a>,
        value: ExprCode<'a>,
    },
    Ann {
        stmt: &'a Stmt,
        value: Option<ExprCode<'a>>,
        target: Target<'a>,
        annotation: ExprCode<'a>,
    },
    /// One target of a `del` statement: each is its own instruction, in order (an error
    /// stops the statement there, as CPython's `DELETE_*` ops do); the statement's own work
    /// begins with the first and ends with the last.
    Del {
        stmt: &'a Stmt,
        target: DelTarget<'a>,
        first: bool,
        last: bool,
    },
}

fn interned(index: &ruff_python_ast::AtomicNodeIndex) -> Option<Sym> {
    index.load().as_u32().map(Sym)
}

impl<'a> Compiler<'a> {
    /// The ops of `obj[index]` in an expression.
    pub(super) fn subscript(&mut self, s: &'a ast::ExprSubscript) -> Op<'a> {
        self.expr(&s.value);
        let width = self.index_operands(&s.slice);
        Op::Subscript(SubscriptOp::Load {
            index: &s.slice,
            width,
            at: s.range().start().to_u32(),
        })
    }

    /// Pushes the ops of an index's operands; how many values they leave.
    fn index_operands(&mut self, index: &'a Expr) -> u32 {
        let (parts, _) = written_parts(index);
        for part in parts {
            match part {
                Expr::Slice(s) => {
                    for bound in [&s.lower, &s.upper, &s.step] {
                        match bound {
                            Some(e) => self.expr(e),
                            None => self.exprs.push(Op::Const(crate::heap::Value::None)),
                        }
                    }
                }
                Expr::EllipsisLiteral(_) => {}
                other => self.expr(other),
            }
        }
        parts.iter().map(part_width).sum::<usize>() as u32
    }

    fn target(&mut self, node: &'a Expr) -> Option<Target<'a>> {
        let Expr::Subscript(s) = node else {
            return None;
        };
        let obj = self.expr_code(&s.value);
        let start = self.here_op();
        self.index_operands(&s.slice);
        Some(Target {
            node,
            obj,
            index: ExprCode {
                root: &s.slice,
                start,
                end: self.here_op(),
            },
        })
    }

    /// Compiles a statement with a subscript target (or a `del` with any attribute or
    /// subscript target), if it is one; `false` leaves it to the other compilers.
    pub(super) fn subscript_stmt(&mut self, s: &'a Stmt) -> bool {
        let code = match s {
            Stmt::Assign(a) if matches!(a.targets.as_slice(), [Expr::Subscript(_)]) => {
                let value = self.expr_code(&a.value);
                let target = self.target(&a.targets[0]).expect("checked above");
                SubStmt::Assign {
                    stmt: s,
                    value,
                    target,
                }
            }
            Stmt::AugAssign(a) if a.target.is_subscript_expr() => {
                let target = self.target(&a.target).expect("checked above");
                SubStmt::Aug {
                    stmt: s,
                    op: a.op,
                    target,
                    value: self.expr_code(&a.value),
                }
            }
            Stmt::AnnAssign(a) if a.target.is_subscript_expr() => {
                let value = a.value.as_deref().map(|v| self.expr_code(v));
                let target = self.target(&a.target).expect("checked above");
                SubStmt::Ann {
                    stmt: s,
                    value,
                    target,
                    annotation: self.expr_code(&a.annotation),
                }
            }
            Stmt::Delete(d)
                if d.targets.iter().any(|t| !t.is_name_expr())
                    && d.targets.iter().all(|t| {
                        t.is_name_expr() || t.is_attribute_expr() || t.is_subscript_expr()
                    })
                    && !matches!(d.targets.as_slice(), [Expr::Attribute(_)]) =>
            {
                return self.del_targets(s, &d.targets);
            }
            _ => return false,
        };
        self.instrs
            .push(Instr::Compiled(Compiled::Stmt(StmtCode::Subscript(code))));
        true
    }

    /// Compiles a `del`'s targets, one instruction each.
    fn del_targets(&mut self, stmt: &'a Stmt, targets: &'a [Expr]) -> bool {
        let attrs_interned = targets.iter().all(|t| match t {
            Expr::Attribute(a) => interned(&a.attr.node_index).is_some(),
            _ => true,
        });
        if !attrs_interned {
            return false;
        }
        for (i, t) in targets.iter().enumerate() {
            let target = match t {
                Expr::Name(_) => DelTarget::Name(t),
                Expr::Attribute(a) => DelTarget::Attr {
                    node: t,
                    attr: interned(&a.attr.node_index).expect("checked above"),
                    obj: self.expr_code(&a.value),
                },
                _ => DelTarget::Item(self.target(t).expect("a subscript")),
            };
            let code = SubStmt::Del {
                stmt,
                target,
                first: i == 0,
                last: i + 1 == targets.len(),
            };
            self.instrs
                .push(Instr::Compiled(Compiled::Stmt(StmtCode::Subscript(code))));
        }
        true
    }
}
