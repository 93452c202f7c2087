//! Splitting an expression at its suspension points (`yield`, `yield from`, `await` inside
//! a larger expression).
//!
//! CPython evaluates an expression onto the frame's value stack, so the operands computed
//! before a suspension point stay there, held by the suspended frame, until the expression
//! resumes and finishes: `f(make(), await g())` keeps the result of `make()` alive across
//! the `await`. The compiler does the same: every operand that comes before the last
//! suspension point (in CPython's evaluation order) is an [`Instr::Push`], each suspension
//! point leaves its result on the stack ([`Dest::Push`]), and an [`Instr::Bind`] hands
//! those values to the evaluator, which takes them in place of the nodes when it
//! evaluates the rest of the expression in the consuming instruction.
//!
//! Operands that CPython may skip (the right side of `and`/`or`, the branches of `x if c
//! else y`, later links of a chained comparison) cannot hold a suspension point here:
//! they are refused, located.

use super::compile::{Compiler, Dest, Instr, Refusal, first_suspension, offset};
use ruff_python_ast::{self as ast, Expr};

impl<'a> Compiler<'a> {
    /// Splits `e` (which holds a suspension point) and binds the values it leaves, so that
    /// the next instruction evaluates `e` from them.
    pub(super) fn split_bind(&mut self, e: &'a Expr) -> Result<(), Refusal> {
        let mut nodes = Vec::new();
        self.split(e, &mut nodes)?;
        let start = self.bound.len() as u32;
        let len = nodes.len() as u32;
        self.bound.extend(nodes);
        self.instrs.push(Instr::Bind { start, len });
        Ok(())
    }

    /// Emits the instructions that leave on the stack, in evaluation order, the values of
    /// the nodes it appends to `nodes`: the operands before `e`'s last suspension point
    /// and the results of its suspension points.
    fn split(&mut self, e: &'a Expr, nodes: &mut Vec<&'a Expr>) -> Result<(), Refusal> {
        match e {
            Expr::Yield(y) => {
                if let Some(v) = y.value.as_deref()
                    && self.suspends_expr(v)
                {
                    self.split_bind(v)?;
                }
                self.instrs.push(Instr::Yield {
                    value: y.value.as_deref(),
                    target: Dest::Push,
                    at: offset(y),
                });
            }
            Expr::YieldFrom(y) => self.yield_from(y, Dest::Push)?,
            Expr::Await(_) if self.coroutine => self.await_(e, Dest::Push)?,
            _ => {
                let parts = operands(e).ok_or_else(|| refuse_position(e, "expression"))?;
                let Some(last) = parts.iter().rposition(|p| self.suspends_expr(p.expr)) else {
                    return Ok(());
                };
                // An operand up to the last suspension point that is evaluated only
                // sometimes cannot be evaluated ahead.
                if parts[..=last].iter().any(|p| !p.always_evaluated) {
                    return Err(refuse_position(
                        parts[last].expr,
                        "conditionally evaluated operand",
                    ));
                }
                for part in &parts[..=last] {
                    if self.suspends_expr(part.expr) {
                        self.split(part.expr, nodes)?;
                    } else {
                        self.instrs.push(Instr::Push(part.expr));
                        nodes.push(part.expr);
                    }
                }
                return Ok(());
            }
        }
        nodes.push(e);
        Ok(())
    }
}

/// An operand of an expression, in evaluation order.
struct Operand<'a> {
    expr: &'a Expr,
    /// CPython evaluates it whenever the expression is evaluated (not behind a short
    /// circuit or a condition), so a suspension point there can be split.
    always_evaluated: bool,
}

/// The operands of `e` in the order the evaluator (and CPython) evaluates them; `None` for
/// a kind of expression that is not split.
fn operands(e: &Expr) -> Option<Vec<Operand<'_>>> {
    let always = |expr| Operand {
        expr,
        always_evaluated: true,
    };
    let sometimes = |expr| Operand {
        expr,
        always_evaluated: false,
    };
    let mut out = Vec::new();
    match e {
        Expr::BinOp(b) => out.extend([always(&b.left), always(&b.right)]),
        Expr::UnaryOp(u) => out.push(always(&u.operand)),
        Expr::BoolOp(b) => {
            let (first, rest) = b.values.split_first()?;
            out.push(always(first));
            out.extend(rest.iter().map(sometimes));
        }
        Expr::Compare(c) => {
            out.push(always(&c.left));
            for (i, x) in c.comparators.iter().enumerate() {
                out.push(if i == 0 { always(x) } else { sometimes(x) });
            }
        }
        Expr::If(i) => out.extend([always(&i.test), sometimes(&i.body), sometimes(&i.orelse)]),
        Expr::Call(c) => {
            // `obj.method(...)`: the object is evaluated, the method looked up at the call.
            out.push(match &*c.func {
                Expr::Attribute(a) => always(&a.value),
                f => always(f),
            });
            for a in c.arguments.args.iter() {
                out.push(match a {
                    Expr::Starred(s) => always(&s.value),
                    a => always(a),
                });
            }
            out.extend(c.arguments.keywords.iter().map(|k| always(&k.value)));
        }
        Expr::Attribute(a) => out.push(always(&a.value)),
        Expr::Subscript(s) => {
            out.push(always(&s.value));
            match &*s.slice {
                Expr::Slice(sl) => {
                    let parts = [&sl.lower, &sl.upper, &sl.step];
                    out.extend(parts.into_iter().flatten().map(|x| always(&**x)));
                }
                Expr::Tuple(_) => out.push(sometimes(&s.slice)),
                index => out.push(always(index)),
            }
        }
        Expr::Tuple(ast::ExprTuple { elts, .. })
        | Expr::List(ast::ExprList { elts, .. })
        | Expr::Set(ast::ExprSet { elts, .. }) => {
            // `*` unpacking is not split (its evaluator path is not `eval`).
            if elts.iter().any(Expr::is_starred_expr) {
                return None;
            }
            out.extend(elts.iter().map(always));
        }
        Expr::Dict(d) => {
            for item in &d.items {
                out.extend([always(item.key.as_ref()?), always(&item.value)]);
            }
        }
        Expr::Named(n) => out.push(always(&n.value)),
        _ => return None,
    }
    Some(out)
}

/// A suspension point where the compiler cannot split its expression, located at the
/// suspension point itself.
fn refuse_position(e: &Expr, place: &str) -> Refusal {
    let construct = if place == "expression" {
        "`yield` or `await` inside this kind of expression (f-strings, comprehensions' first iterable, lambdas, `*` unpacking and slices of tuples are not split at suspension points)"
    } else {
        "`yield` or `await` in an operand that is evaluated only sometimes (after `and`/`or`, in a branch of `x if c else y`, in a later link of a chained comparison)"
    };
    Refusal {
        offset: first_suspension(e),
        construct,
    }
}
