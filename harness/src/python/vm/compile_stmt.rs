//! Simple statements of plain bodies compiled to instructions instead of tree-walker
//! leaves ([`Instr::Exec`]); run by `eval_stmt.rs`. Each is a whole statement (its line,
//! its step of the budget, the per-statement work after it), as the leaf was.
//!
//! - `x op= v`, `o.a op= v`: the target's container once, its current value, the value,
//!   the in-place operator, the store (CPython's `LOAD_NAME`/`LOAD_ATTR` with `COPY`,
//!   `BINARY_OP` in place, `STORE_*`); subscript targets: `compile_subscript.rs`.
//! - `x: T = v` to a name or attribute: the value then the store (the annotation is not
//!   evaluated, as the tree walker did not).
//! - `del x, y` of names, `del o.a` of one attribute.
//! - `assert test, msg`: the message is evaluated only when the test is false.
//! - `pass`, `global`, `nonlocal`, `x: T`: only the statement's own work.

use super::compile::{Compiler, Instr};
use super::compile_expr::{Compiled, ExprCode};
use crate::heap::Sym;
use ruff_python_ast::{Expr, Operator, Stmt};

/// A compiled simple statement (one [`Compiled::Stmt`]).
#[derive(Clone, Copy)]
pub(in crate::python) enum StmtCode<'a> {
    /// `name op= value`.
    AugName {
        stmt: &'a Stmt,
        op: Operator,
        name: Sym,
        value: ExprCode<'a>,
    },
    /// `obj.attr op= value`.
    AugAttr {
        stmt: &'a Stmt,
        op: Operator,
        obj: ExprCode<'a>,
        attr: Sym,
        value: ExprCode<'a>,
    },
    /// `target: T = value` (a name or an attribute target).
    AnnAssign {
        stmt: &'a Stmt,
        target: &'a Expr,
        value: ExprCode<'a>,
    },
    /// `del` of names only.
    DelNames { stmt: &'a Stmt, targets: &'a [Expr] },
    /// `del obj.attr`.
    DelAttr {
        stmt: &'a Stmt,
        target: &'a Expr,
        obj: ExprCode<'a>,
        attr: Sym,
    },
    Assert {
        stmt: &'a Stmt,
        test: ExprCode<'a>,
        msg: Option<ExprCode<'a>>,
    },
    /// `import`, `def` and `class` (`compile_defs.rs`, run by `eval_defs.rs`).
    Def(super::compile_defs::DefStmt<'a>),
    /// A statement with a subscript target, or a `del` of several kinds of targets
    /// (`compile_subscript.rs`, run by `eval_subscript.rs`).
    Subscript(super::compile_subscript::SubStmt<'a>),
}

fn interned(index: &ruff_python_ast::AtomicNodeIndex) -> Option<Sym> {
    index.load().as_u32().map(Sym)
}

impl<'a> Compiler<'a> {
    /// Compiles a simple statement of a plain body, if it is one of the above; `false`
    /// leaves it a leaf.
    pub(super) fn simple_stmt(&mut self, s: &'a Stmt) -> bool {
        let code = match s {
            Stmt::Pass(_) | Stmt::Global(_) | Stmt::Nonlocal(_) => return self.bare(s),
            Stmt::AnnAssign(a) if a.value.is_none() => return self.bare(s),
            Stmt::AugAssign(a) => match &*a.target {
                Expr::Name(n) => {
                    let Some(name) = interned(&n.node_index) else {
                        return false;
                    };
                    StmtCode::AugName {
                        stmt: s,
                        op: a.op,
                        name,
                        value: self.expr_code(&a.value),
                    }
                }
                Expr::Attribute(t) => {
                    let Some(attr) = interned(&t.attr.node_index) else {
                        return false;
                    };
                    StmtCode::AugAttr {
                        stmt: s,
                        op: a.op,
                        obj: self.expr_code(&t.value),
                        attr,
                        value: self.expr_code(&a.value),
                    }
                }
                _ => return false,
            },
            Stmt::AnnAssign(a) if matches!(&*a.target, Expr::Name(_) | Expr::Attribute(_)) => {
                StmtCode::AnnAssign {
                    stmt: s,
                    target: &a.target,
                    value: self.expr_code(a.value.as_deref().expect("checked above")),
                }
            }
            Stmt::Delete(d) if d.targets.iter().all(Expr::is_name_expr) => StmtCode::DelNames {
                stmt: s,
                targets: &d.targets,
            },
            Stmt::Delete(d) => match d.targets.as_slice() {
                [target @ Expr::Attribute(t)] => {
                    let Some(attr) = interned(&t.attr.node_index) else {
                        return false;
                    };
                    StmtCode::DelAttr {
                        stmt: s,
                        target,
                        obj: self.expr_code(&t.value),
                        attr,
                    }
                }
                _ => return false,
            },
            Stmt::Assert(a) => StmtCode::Assert {
                stmt: s,
                test: self.expr_code(&a.test),
                msg: a.msg.as_deref().map(|m| self.expr_code(m)),
            },
            _ => return false,
        };
        self.instrs.push(Instr::Compiled(Compiled::Stmt(code)));
        true
    }

    /// A statement with nothing to run but its own per-statement work.
    fn bare(&mut self, s: &'a Stmt) -> bool {
        self.instrs.push(Instr::StmtStart(s));
        self.instrs.push(Instr::StmtEnd);
        true
    }
}

/// The operand node of an `assert` whose location an `AssertionError` takes.
pub(super) fn assert_test(stmt: &Stmt) -> &Expr {
    match stmt {
        Stmt::Assert(a) => &a.test,
        _ => unreachable!("an assert statement"),
    }
}
