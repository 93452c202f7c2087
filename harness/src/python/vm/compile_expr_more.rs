//! Compiling the expression forms that the first expression compiler (`compile_expr.rs`)
//! left to the tree evaluator: chained comparisons, dict and set displays, constant
//! tuples, f-strings and `:=` (run by `eval_expr_more.rs`).
//!
//! Each form keeps the tree evaluator's order of evaluation and release (CPython's):
//! - `a < b < c`: `a`, `b`, compare (`a` released), then on a false link `b` released and
//!   that link's result is the value; otherwise the result is released and `c` is
//!   evaluated with `b` still held (CPython's `COPY`/`SWAP` around `COMPARE_OP`,
//!   `JUMP_IF_FALSE_OR_POP`); the last link's result is the value (a tensor for tensors).
//! - `{k: v, ...}` (up to 15 pairs, no `**`): each key then its value, then the dict is
//!   made and filled in order (`BUILD_MAP`), where an unhashable key fails: after every
//!   pair was evaluated, as CPython 3.8-3.13 do (the tree evaluator checked each key before
//!   its value). Larger displays, which 3.10+ build first and fill with `MAP_ADD`, stay
//!   with the tree evaluator.
//! - `{a, b}` (no `*`, not a constant display CPython folds to a frozenset): the items,
//!   then the set (`BUILD_SET`).
//! - `(1, 'a')`: a constant of the code object, made once and shared (`LOAD_CONST`).
//! - `f"{x!r:>8}"`: each field's value is formatted and released before the next field is
//!   evaluated (`FORMAT_VALUE`), the text joined at the end (`BUILD_STRING`).
//! - `(n := v)`: the value is stored and stays the expression's value (`COPY`, `STORE`).

use super::compile::Compiler;
use super::compile_expr::Op;
use ruff_python_ast::{self as ast, CmpOp, Expr, InterpolatedStringElement};
use ruff_text_size::Ranged;

/// The ops of the forms compiled here (one [`Op::More`] each).
#[derive(Clone, Copy)]
pub(in crate::python) enum MoreOp<'a> {
    /// One link of a chained comparison but the last: pops the right then the left operand
    /// and compares them (the left released). True: the result is released and the right
    /// operand pushed back as the next link's left. False: the right operand is released,
    /// the result pushed as the expression's value and control jumps to `end`. The last
    /// link is an [`Op::Compare`], whose result is the value.
    ChainLink { op: CmpOp, at: u32, end: u32 },
    /// Pops `len` key/value pairs into a new dict; an unhashable key fails there, after
    /// every pair was evaluated.
    BuildDict { len: u32, at: u32 },
    /// Pops `len` items into a new set.
    BuildSet { len: u32 },
    /// The shared constant tuple of this node.
    ConstTuple(&'a ast::ExprTuple),
    /// Starts an f-string: pushes the marker of its text buffer.
    FStringStart { at: u32 },
    /// Appends literal text to the f-string's text.
    Text(&'a str),
    /// Pops a field's value, formats it into the f-string's text and releases it.
    FormatField(&'a ast::InterpolatedElement),
    /// Pops the text of a field's spec (made by the ops of its nested fields, each
    /// formatted and released in turn) then the field's value, formats the value with that
    /// spec into the f-string's text and releases it (`FORMAT_VALUE` with a spec).
    FormatFieldSpec(&'a ast::InterpolatedElement),
    /// Pops the marker and pushes the f-string's text.
    FStringEnd,
    /// `:=`: stores (a new reference to) the value on top in `target`.
    StoreNamed { target: &'a Expr },
    /// A starred display or a folded constant set (`compile_expr_starred.rs`).
    Starred(super::compile_expr_starred::StarredOp<'a>),
}

fn at(node: &impl Ranged) -> u32 {
    node.range().start().to_u32()
}

/// Dict displays up to this many pairs are built after their pairs (see the module doc).
const MAX_BUILT_AFTER: usize = 15;

impl<'a> Compiler<'a> {
    /// Compiles `e` if it is one of the forms above, pushing its ops; `false` leaves it to
    /// the tree evaluator.
    pub(super) fn expr_more(&mut self, e: &'a Expr) -> bool {
        match e {
            Expr::Compare(c) if c.ops.len() > 1 => self.chained_compare(c),
            Expr::Dict(d)
                if d.items.len() <= MAX_BUILT_AFTER && d.items.iter().all(|i| i.key.is_some()) =>
            {
                for item in &d.items {
                    let key = item.key.as_ref().expect("checked above");
                    self.expr(key);
                    self.expr(&item.value);
                }
                self.more(MoreOp::BuildDict {
                    len: d.items.len() as u32,
                    at: at(d),
                });
            }
            Expr::Set(s) if !s.elts.iter().any(Expr::is_starred_expr) && !folded_set(s) => {
                s.elts.iter().for_each(|x| self.expr(x));
                self.more(MoreOp::BuildSet {
                    len: s.elts.len() as u32,
                });
            }
            Expr::Tuple(t) if t.elts.iter().all(crate::python::interp::is_constant) => {
                self.more(MoreOp::ConstTuple(t));
            }
            Expr::FString(f) => self.fstring(f),
            Expr::Named(n) if matches!(&*n.target, Expr::Name(_)) => {
                self.expr(&n.value);
                self.more(MoreOp::StoreNamed { target: &n.target });
            }
            _ => return self.expr_starred(e),
        }
        true
    }

    fn more(&mut self, op: MoreOp<'a>) {
        self.exprs.push(Op::More(op));
    }

    fn chained_compare(&mut self, c: &'a ast::ExprCompare) {
        self.expr(&c.left);
        let mut links = Vec::with_capacity(c.ops.len());
        let last = c.ops.len() - 1;
        for (i, (op, right)) in c.ops.iter().zip(c.comparators.iter()).enumerate() {
            self.expr(right);
            if i == last {
                self.exprs.push(Op::Compare { op: *op, at: at(c) });
            } else {
                links.push((self.exprs.len(), *op));
                self.more(MoreOp::ChainLink {
                    op: *op,
                    at: at(c),
                    end: 0,
                });
            }
        }
        let end = self.here_op();
        for (i, op) in links {
            self.exprs[i] = Op::More(MoreOp::ChainLink { op, at: at(c), end });
        }
    }

    fn fstring(&mut self, f: &'a ast::ExprFString) {
        self.more(MoreOp::FStringStart { at: at(f) });
        for part in f.value.iter() {
            match part {
                ast::FStringPart::Literal(l) => self.more(MoreOp::Text(&l.value)),
                ast::FStringPart::FString(fs) => {
                    for element in fs.elements.iter() {
                        match element {
                            InterpolatedStringElement::Literal(l) => {
                                self.more(MoreOp::Text(&l.value));
                            }
                            InterpolatedStringElement::Interpolation(i) => self.field(i),
                        }
                    }
                }
            }
        }
        self.more(MoreOp::FStringEnd);
    }

    /// One `{expr!conv:spec}`: the value, then a spec with nested fields is built as an
    /// f-string of its own (CPython evaluates those after the value), then the value is
    /// formatted. A self-documenting field's text (`{x=}`) is written by the format op.
    fn field(&mut self, i: &'a ast::InterpolatedElement) {
        self.expr(&i.expression);
        let nested = i.format_spec.as_ref().filter(|s| {
            s.elements
                .iter()
                .any(|e| matches!(e, InterpolatedStringElement::Interpolation(_)))
        });
        let Some(spec) = nested else {
            self.more(MoreOp::FormatField(i));
            return;
        };
        self.more(MoreOp::FStringStart { at: at(&**spec) });
        for element in spec.elements.iter() {
            match element {
                InterpolatedStringElement::Literal(l) => self.more(MoreOp::Text(&l.value)),
                InterpolatedStringElement::Interpolation(inner) => self.field(inner),
            }
        }
        self.more(MoreOp::FStringEnd);
        self.more(MoreOp::FormatFieldSpec(i));
    }
}

/// A display of 3 or more constants, which CPython 3.9+ folds into a frozenset constant
/// (`sets.rs` models the table that makes).
fn folded_set(s: &ast::ExprSet) -> bool {
    s.elts.len() >= 3 && s.elts.iter().all(crate::python::interp::is_constant)
}
