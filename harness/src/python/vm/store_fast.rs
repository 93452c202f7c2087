//! Stores to a function's plain locals resolved to their frame slots once the body is
//! compiled (CPython's `STORE_FAST`/`DELETE_FAST`): `name = v`, `a, b = v` to names,
//! `name op= v`, a `for` loop's name target and `del` of names. Running them indexes the
//! frame's slot table; the name path (`Interpreter::store_name`) looks the name's scope up
//! in a hash table per store. Module and class bodies keep their namespace stores, and a
//! name declared `global`, a cell or a free variable keeps the name path.
//!
//! Release order is the name path's: the value a store replaces is released after the
//! store, as CPython's `STORE_FAST` does (`Py_XDECREF(old)` after `SETLOCAL`).

use super::compile::{Instr, VmCode};
use super::compile_expr::{Compiled, ExprCode, Op};
use super::compile_stmt::StmtCode;
use super::eval_expr::Step;
use crate::heap::Sym;
use crate::python::interp::{Interpreter, R};
use crate::python::scope::{Code, NameScope};
use ruff_python_ast::{self as ast, Expr, Operator, Stmt};
use std::sync::atomic::{AtomicU64, Ordering};

static RESOLVED: AtomicU64 = AtomicU64::new(0);

/// How many store instructions of function bodies were resolved to slots in this process
/// (counted once per compiled body, not per run): lets a test tell that a function's name
/// stores run by slot.
pub fn stores_resolved_to_slots() -> u64 {
    RESOLVED.load(Ordering::Relaxed)
}

/// A range of ops in `VmCode::exprs` that are [`Op::StoreFast`] or [`Op::DeleteFast`]
/// (not an expression: it leaves no value).
#[derive(Clone, Copy)]
pub(in crate::python) struct OpRange {
    start: u32,
    end: u32,
}

/// A name store resolved to slots ([`Compiled::Fast`]).
#[derive(Clone, Copy)]
pub(in crate::python) enum FastCode<'a> {
    /// `name = value`.
    Assign {
        stmt: &'a Stmt,
        slot: u32,
        value: ExprCode<'a>,
    },
    /// `a, b = value` to names only (no `*`): `stores` in target order.
    Unpack {
        stmt: &'a Stmt,
        targets: &'a [Expr],
        value: ExprCode<'a>,
        stores: OpRange,
    },
    /// A `for` loop's next item into a name (`FOR_ITER`, `STORE_FAST`).
    ForNext { slot: u32, exit: u32, depth: u32 },
    /// `name op= value`.
    Aug {
        stmt: &'a Stmt,
        op: Operator,
        slot: u32,
        name: Sym,
        value: ExprCode<'a>,
    },
    /// `del a, b` of names.
    Delete { stmt: &'a Stmt, deletes: OpRange },
    /// `name.attr = value` where `name` is a local or a cell or free variable of the
    /// function: the object is loaded by slot or cell (`STORE_ATTR` after `LOAD_FAST` or
    /// `LOAD_DEREF`), not through the tree evaluator's name lookup.
    Attr {
        stmt: &'a Stmt,
        holder: Holder,
        attr: Sym,
        value: ExprCode<'a>,
    },
}

/// Where the object of a resolved attribute store is read from.
#[derive(Clone, Copy)]
pub(in crate::python) enum Holder {
    /// A plain local's slot.
    Slot { slot: u32, name: Sym, at: u32 },
    /// A cell or free variable of the frame.
    Deref { name: Sym, at: u32 },
}

/// The holder of `n` when it is a local, cell or free variable of `code`.
fn holder_of(n: &ast::ExprName, code: &Code<'_>) -> Option<Holder> {
    let name = Sym(n.node_index.load().as_u32()?);
    let at = n.range.start().to_u32();
    match code.scopes.get(&name) {
        Some(&NameScope::Local(slot)) => Some(Holder::Slot { slot, name, at }),
        Some(NameScope::Cell | NameScope::Free) => Some(Holder::Deref { name, at }),
        _ => None,
    }
}

/// The slot of `n` when it is a plain local of `code`.
fn slot_of(n: &ast::ExprName, code: &Code<'_>) -> Option<u32> {
    let sym = Sym(n.node_index.load().as_u32()?);
    match code.scopes.get(&sym) {
        Some(&NameScope::Local(slot)) => Some(slot),
        _ => None,
    }
}

/// The slots of `targets` when every one is a plain local name.
fn slots_of(targets: &[Expr], code: &Code<'_>) -> Option<Vec<(u32, Sym, u32)>> {
    targets
        .iter()
        .map(|t| match t {
            Expr::Name(n) => {
                let slot = slot_of(n, code)?;
                Some((
                    slot,
                    Sym(n.node_index.load().as_u32()?),
                    n.range.start().to_u32(),
                ))
            }
            _ => None,
        })
        .collect()
}

/// Resolves the name stores of a function body's plain instructions to its slots, as
/// [`super::compile_expr::resolve_names`] resolves its loads. Only for function bodies.
pub(in crate::python) fn resolve_stores(vm: &mut VmCode<'_>, code: &Code<'_>) {
    for i in 0..vm.instrs.len() {
        let fast = match vm.instrs[i] {
            Instr::Compiled(Compiled::Assign(stmt, a, value)) => match a.targets.as_slice() {
                [Expr::Name(n)] => match slot_of(n, code) {
                    Some(slot) => FastCode::Assign { stmt, slot, value },
                    None => continue,
                },
                [
                    Expr::Tuple(ast::ExprTuple { elts, .. })
                    | Expr::List(ast::ExprList { elts, .. }),
                ] => {
                    let Some(slots) = slots_of(elts, code) else {
                        continue;
                    };
                    let stores =
                        push_ops(vm, slots.iter().map(|&(slot, ..)| Op::StoreFast { slot }));
                    FastCode::Unpack {
                        stmt,
                        targets: elts,
                        value,
                        stores,
                    }
                }
                [
                    Expr::Attribute(ast::ExprAttribute {
                        value: obj, attr, ..
                    }),
                ] => {
                    let (Expr::Name(n), Some(attr)) = (&**obj, attr.node_index.load().as_u32())
                    else {
                        continue;
                    };
                    let Some(holder) = holder_of(n, code) else {
                        continue;
                    };
                    FastCode::Attr {
                        stmt,
                        holder,
                        attr: Sym(attr),
                        value,
                    }
                }
                _ => continue,
            },
            Instr::LoopNext {
                target: Expr::Name(n),
                exit,
                depth,
            } => match slot_of(n, code) {
                Some(slot) => FastCode::ForNext { slot, exit, depth },
                None => continue,
            },
            Instr::Compiled(Compiled::Stmt(StmtCode::AugName {
                stmt,
                op,
                name,
                value,
            })) => match code.scopes.get(&name) {
                Some(&NameScope::Local(slot)) => FastCode::Aug {
                    stmt,
                    op,
                    slot,
                    name,
                    value,
                },
                _ => continue,
            },
            Instr::Compiled(Compiled::Stmt(StmtCode::DelNames { stmt, targets })) => {
                let Some(slots) = slots_of(targets, code) else {
                    continue;
                };
                let ops = slots
                    .iter()
                    .map(|&(slot, name, at)| Op::DeleteFast { slot, name, at });
                FastCode::Delete {
                    stmt,
                    deletes: push_ops(vm, ops),
                }
            }
            _ => continue,
        };
        vm.instrs[i] = Instr::Compiled(Compiled::Fast(fast));
        RESOLVED.fetch_add(1, Ordering::Relaxed);
    }
}

fn push_ops<'a>(vm: &mut VmCode<'a>, ops: impl Iterator<Item = Op<'a>>) -> OpRange {
    let start = vm.exprs.len() as u32;
    vm.exprs.extend(ops);
    OpRange {
        start,
        end: vm.exprs.len() as u32,
    }
}

impl<'a> Interpreter<'a> {
    /// Runs a resolved store instruction, its per-statement work included.
    pub(super) fn run_fast(
        &mut self,
        vm: &VmCode<'a>,
        code: FastCode<'a>,
        ip: u32,
        base: usize,
    ) -> R<Step> {
        match code {
            FastCode::Assign { stmt, slot, value } => {
                self.statement_start(stmt)?;
                let v = self.eval_compiled(vm, value)?;
                self.store_fast(slot, v);
                self.statement_end()?;
            }
            FastCode::Unpack {
                stmt,
                targets,
                value,
                stores,
            } => {
                self.statement_start(stmt)?;
                let v = self.eval_compiled(vm, value)?;
                let items = self.unpack_exact(targets, v)?;
                let ops = &vm.exprs[stores.start as usize..stores.end as usize];
                for (op, item) in ops.iter().zip(items) {
                    let Op::StoreFast { slot } = *op else {
                        unreachable!("an unpacking's stores are StoreFast")
                    };
                    self.store_fast(slot, item);
                }
                self.statement_end()?;
            }
            FastCode::ForNext { slot, exit, depth } => match self.plain_loop_next(base, depth)? {
                Some(item) => self.store_fast(slot, item),
                None => return Ok(Step::Next(exit)),
            },
            FastCode::Aug {
                stmt,
                op,
                slot,
                name,
                value,
            } => {
                self.statement_start(stmt)?;
                let current = self.load_fast(slot, name)?;
                let rhs = self
                    .eval_compiled(vm, value)
                    .inspect_err(|_| self.heap.decref(current))?;
                let result = self.binary(op, current, rhs, true);
                self.heap.decref(current);
                self.heap.decref(rhs);
                self.store_fast(slot, result?);
                self.statement_end()?;
            }
            FastCode::Delete { stmt, deletes } => {
                self.statement_start(stmt)?;
                for op in &vm.exprs[deletes.start as usize..deletes.end as usize] {
                    let Op::DeleteFast { slot, name, at } = *op else {
                        unreachable!("a `del`'s ops are DeleteFast")
                    };
                    self.offset = at;
                    self.delete_fast(slot, name)?;
                }
                self.statement_end()?;
            }
            FastCode::Attr {
                stmt,
                holder,
                attr,
                value,
            } => {
                self.statement_start(stmt)?;
                let v = self.eval_compiled(vm, value)?;
                let obj = match holder {
                    Holder::Slot { slot, name, at } => {
                        self.offset = at;
                        self.load_fast(slot, name)
                    }
                    Holder::Deref { name, at } => {
                        self.offset = at;
                        self.load_deref(name)
                    }
                };
                let obj = obj.inspect_err(|_| self.heap.decref(v))?;
                let r = self.set_attr(obj, attr, v);
                self.heap.decref(obj);
                r?;
                self.statement_end()?;
            }
        }
        Ok(Step::Next(ip + 1))
    }
}
