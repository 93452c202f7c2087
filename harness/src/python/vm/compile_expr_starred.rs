//! Compiling displays with `*` items (`[*a, b]`, `(x, *y)`, `{*a, *b}`) and the constant
//! set displays CPython 3.9+ folds (run by `eval_expr_starred.rs`).
//!
//! Order of evaluation and release, as the tree evaluator (`interp/starred.rs`) keeps it:
//! the items left to right, each `*x` read to its end (and `x` released) before the next
//! item; the display object is made after every item (a starred tuple display first makes
//! the list CPython builds it in and frees it, `LIST_TO_TUPLE`). The number of items is
//! known only when they are read, so the display's start on the value stack is kept by a
//! marker ([`StarredOp::Begin`]). On an error the items read so far are released top
//! first, as CPython releases the list being built (`list_dealloc` goes from the end).

use super::compile::Compiler;
use super::compile_expr::Op;
use super::compile_expr_more::MoreOp;
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

/// The object a starred display makes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(in crate::python) enum Display {
    List,
    Tuple,
    Set,
}

/// The ops of the forms compiled here (one [`MoreOp::Starred`] each).
#[derive(Clone, Copy)]
pub(in crate::python) enum StarredOp<'a> {
    /// Marks where the display's items start on the value stack.
    Begin,
    /// Pops an iterable and pushes its items (`LIST_EXTEND`, `SET_UPDATE`); `at` is the
    /// `*x` node, where a non-iterable fails.
    Spread { at: u32 },
    /// Pops the items above the marker, and the marker, and pushes the display.
    Build(Display),
    /// A constant set display of 3 or more constants: made from its constants' table as
    /// `sets.rs` models CPython 3.9+'s folded frozenset (the constants are evaluated by
    /// the set display routine, as a constant tuple's are).
    ConstSet(&'a ast::ExprSet),
}

impl<'a> Compiler<'a> {
    /// Compiles `e` if it is one of the forms above; `false` leaves it to the tree
    /// evaluator.
    pub(super) fn expr_starred(&mut self, e: &'a Expr) -> bool {
        let (elts, display): (&'a [Expr], Display) = match e {
            Expr::List(l) => (&l.elts, Display::List),
            Expr::Tuple(t) => (&t.elts, Display::Tuple),
            Expr::Set(s) if !s.elts.iter().any(Expr::is_starred_expr) => {
                self.starred(StarredOp::ConstSet(s));
                return true;
            }
            Expr::Set(s) => (&s.elts, Display::Set),
            _ => return false,
        };
        if !elts.iter().any(Expr::is_starred_expr) {
            return false;
        }
        self.starred(StarredOp::Begin);
        for x in elts {
            match x {
                Expr::Starred(s) => {
                    self.expr(&s.value);
                    self.starred(StarredOp::Spread {
                        at: s.range().start().to_u32(),
                    });
                }
                x => self.expr(x),
            }
        }
        self.starred(StarredOp::Build(display));
        true
    }

    fn starred(&mut self, op: StarredOp<'a>) {
        self.exprs.push(Op::More(MoreOp::Starred(op)));
    }
}
