//! `torch.einsum` as ATen decomposes it (`einsum` and `sumproduct_pair` in
//! `aten/src/ATen/native/Linear.cpp`): no node of its own, only existing rows.
//!
//! Each operand gets one `unsqueeze` per output/contracted label it lacks
//! (`UnsqueezeBackward0`) and one `permute` into the common label order, output labels first
//! (`PermuteBackward0`, recorded even when it is the identity). Two operands are then
//! contracted by `sumproduct_pair`: each is permuted again (`lro, lo, sum` on the left,
//! `lro, sum, ro` on the right) and reshaped to 3-D; `bmm` multiplies them
//! (`BmmBackward0`, saving each 3-D operand when the other requires grad); the result is
//! viewed back (`ViewBackward0`), permuted (`PermuteBackward0`) and finally viewed without the
//! contracted dims (`ViewBackward0`). With nothing to contract, the product is `mul`
//! (`MulBackward0`).
//!
//! Memory: a reshape whose strides allow it is a view (no bytes); otherwise it is
//! `clone` + `_unsafe_view` (a copy of the operand, `CloneBackward0` under
//! `UnsafeViewBackward0`), and that copy is what `BmmBackward0` saves. For `ij,jk->ik`,
//! `bij,bjk->bik` and `bhqd,bhkd->bhqk` of row-major operands every reshape is a view, so the
//! only allocation is the `bmm` output (the result is a view of it) and backward keeps the
//! two operands' storages through the saved views.
//!
//! The model knows strides only for row-major tensors. An operand that is not row-major
//! (a transpose, a permute) has unknown strides: its reshape is taken as a copy, as the
//! model's `reshape` does; an approximation (PyTorch views where the strides allow).
//!
//! Refused (located): ellipses, a repeated label in one operand (a diagonal), the sublist
//! format, three or more operands (contracted in `opt_einsum`'s order when it is installed),
//! a label summed from one operand only, and a single operand with a contraction (`sum`).

use super::amp::CastPolicy;
use super::autograd;
use super::interp::{Interpreter, R};
use super::natives::{Args, binary_device, op_output, sequence_items, tensor_binary, view_by};
use crate::heap::{ObjKind, Value};
use ruff_python_ast::Operator;

/// Labels `A-Z` then `a-z`, in ATen's subscript order.
const TOTAL_LABELS: usize = 52;

/// One operand on its way through the contraction: an owned reference, its sizes and, when
/// known, its strides (elements).
struct Op {
    v: Value,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
}

/// `torch.einsum(equation, *operands)` (or one list/tuple of operands).
pub(super) fn call(it: &mut Interpreter<'_>, a: &Args) -> R<Value> {
    if a.pos.len() < 2 {
        return it.error(
            "ValueError: einsum(): must specify the equation string and at least one operand, or at least one operand and its subscripts list",
        );
    }
    let equation = match a.pos[0] {
        Value::Str(s) => it.names.name(s).to_string(),
        v if it.is_tensor(v) => {
            return it.unsupported("torch.einsum's sublist format (operands with subscript lists)");
        }
        v => {
            return it.error(format!(
                "TypeError: einsum(): argument 'equation' must be str, not {}",
                it.type_name_of(v)
            ));
        }
    };
    let operands = match &a.pos[1..] {
        [one] if !it.is_tensor(*one) => sequence_items(it, *one)?,
        many => many.to_vec(),
    };
    for (i, &v) in operands.iter().enumerate() {
        if !it.is_tensor(v) {
            return it.error(format!(
                "TypeError: einsum(): argument 'operands' must be tuple of Tensors, not {} at position {i}",
                it.type_name_of(v)
            ));
        }
    }
    if operands.len() > 2 {
        return it.unsupported(
            "torch.einsum of three or more operands (contracted in opt_einsum's order when it is installed)",
        );
    }
    let plan = parse(it, &equation, &operands)?;
    let mut ops = Vec::with_capacity(operands.len());
    for (i, &v) in operands.iter().enumerate() {
        match align(it, v, &plan.labels[i], &plan) {
            Ok(op) => ops.push(op),
            Err(e) => {
                ops.into_iter().for_each(|o: Op| it.heap.decref(o.v));
                return Err(e);
            }
        }
    }
    let contracted = plan.perm_index > plan.out_num_dim;
    let result = if ops.len() == 2 {
        let b = ops.pop().expect("two operands");
        let a = ops.pop().expect("two operands");
        contract(it, a, b, &plan)
    } else if contracted {
        let op = ops.pop().expect("one operand");
        it.heap.decref(op.v);
        return it.unsupported("torch.einsum of one operand that sums a subscript out (its `sum`)");
    } else {
        return Ok(ops.pop().expect("one operand").v);
    }?;
    if contracted {
        let shape = result.shape[..plan.out_num_dim].to_vec();
        return Ok(view(it, result, shape)?.v);
    }
    Ok(result.v)
}

/// The parsed equation: each operand's labels, where each label goes in the common order,
/// and how many operands have each common dim with a size other than 1.
struct Plan {
    labels: Vec<Vec<usize>>,
    perm_of: [Option<usize>; TOTAL_LABELS],
    out_num_dim: usize,
    perm_index: usize,
    dim_counts: Vec<u32>,
}

fn label_index(c: char) -> usize {
    if c.is_ascii_uppercase() {
        c as usize - 'A' as usize
    } else {
        c as usize - 'a' as usize + 26
    }
}

fn label_char(l: usize) -> char {
    if l < 26 {
        (b'A' + l as u8) as char
    } else {
        (b'a' + (l - 26) as u8) as char
    }
}

/// Parses `equation` and checks it against the operands, with ATen's messages.
fn parse(it: &Interpreter<'_>, equation: &str, operands: &[Value]) -> R<Plan> {
    let arrow = equation.find("->");
    let lhs = &equation[..arrow.unwrap_or(equation.len())];
    let mut labels: Vec<Vec<usize>> = vec![Vec::new(); operands.len()];
    let mut current = 0;
    for (i, c) in lhs.chars().enumerate() {
        match c {
            ' ' => {}
            '.' => return it.unsupported("torch.einsum with an ellipsis (`...`)"),
            ',' => {
                current += 1;
                if current >= operands.len() {
                    return it.error(
                        "RuntimeError: einsum(): fewer operands were provided than specified in the equation",
                    );
                }
            }
            c if c.is_ascii_alphabetic() => labels[current].push(label_index(c)),
            _ => {
                return it.error(format!(
                    "RuntimeError: einsum(): invalid subscript given at index {i} in the equation string, subscripts must be in [a-zA-Z]"
                ));
            }
        }
    }
    if current + 1 != operands.len() {
        return it.error(
            "RuntimeError: einsum(): more operands were provided than specified in the equation",
        );
    }
    let mut count = [0u32; TOTAL_LABELS];
    for (i, (ls, &v)) in labels.iter().zip(operands).enumerate() {
        let ndim = it.tensor_data(v).map_or(0, |t| t.shape.len());
        if ls.len() != ndim {
            return it.error(format!(
                "RuntimeError: einsum(): the number of subscripts in the equation ({}) does not match the number of dimensions ({ndim}) for operand {i} and no ellipsis was given",
                ls.len()
            ));
        }
        for (k, &l) in ls.iter().enumerate() {
            if ls[..k].contains(&l) {
                return it.unsupported(format!(
                    "torch.einsum with subscript {} repeated in operand {i} (its diagonal)",
                    label_char(l)
                ));
            }
            count[l] += 1;
        }
    }
    let mut perm_of = [None; TOTAL_LABELS];
    let mut perm_index = 0;
    match arrow {
        None => {
            for l in 0..TOTAL_LABELS {
                if count[l] == 1 {
                    perm_of[l] = Some(perm_index);
                    perm_index += 1;
                }
            }
        }
        Some(pos) => {
            for (i, c) in equation[pos + 2..].chars().enumerate() {
                match c {
                    ' ' => {}
                    '.' => return it.unsupported("torch.einsum with an ellipsis (`...`)"),
                    c if c.is_ascii_alphabetic() => {
                        let l = label_index(c);
                        if count[l] == 0 || perm_of[l].is_some() {
                            let why = if perm_of[l].is_some() {
                                "appears more than once in the output"
                            } else {
                                "does not appear in the equation for any input operand"
                            };
                            return it.error(format!(
                                "RuntimeError: einsum(): output subscript {c} {why}"
                            ));
                        }
                        perm_of[l] = Some(perm_index);
                        perm_index += 1;
                    }
                    _ => {
                        return it.error(format!(
                            "RuntimeError: einsum(): invalid subscript given at index {} in the equation string, subscripts must be in [a-zA-Z]",
                            lhs.len() + 2 + i
                        ));
                    }
                }
            }
        }
    }
    let out_num_dim = perm_index;
    for l in 0..TOTAL_LABELS {
        if count[l] > 0 && perm_of[l].is_none() {
            perm_of[l] = Some(perm_index);
            perm_index += 1;
        }
    }
    let mut size = [1i64; TOTAL_LABELS];
    let mut dim_counts = vec![0u32; perm_index];
    for (i, (ls, &v)) in labels.iter().zip(operands).enumerate() {
        let shape = it.tensor_data(v).map(|t| t.shape).unwrap_or_default();
        for (&l, &s) in ls.iter().zip(&shape) {
            if s != 1 {
                if size[l] != 1 && size[l] != s {
                    return it.error(format!(
                        "RuntimeError: einsum(): subscript {} has size {s} for operand {i} which does not broadcast with previously seen size {}",
                        label_char(l),
                        size[l]
                    ));
                }
                size[l] = s;
                dim_counts[perm_of[l].expect("every label placed")] += 1;
            }
        }
    }
    Ok(Plan {
        labels,
        perm_of,
        out_num_dim,
        perm_index,
        dim_counts,
    })
}

/// One operand unsqueezed for the labels it lacks and permuted into the common order.
fn align(it: &mut Interpreter<'_>, v: Value, labels: &[usize], plan: &Plan) -> R<Op> {
    let t = it.tensor_data(v).expect("checked");
    let strides = t.contiguous.then(|| row_major_strides(&t.shape));
    it.heap.incref(v);
    let mut op = Op {
        v,
        shape: t.shape,
        strides,
    };
    let mut permutation: Vec<Option<usize>> = vec![None; plan.perm_index];
    for (dim, &l) in labels.iter().enumerate() {
        permutation[plan.perm_of[l].expect("placed")] = Some(dim);
    }
    let mut dim = labels.len();
    let mut perm = Vec::with_capacity(plan.perm_index);
    for p in permutation {
        perm.push(match p {
            Some(d) => d,
            None => {
                op = unsqueeze(it, op, dim)?;
                dim += 1;
                dim - 1
            }
        });
    }
    permute(it, op, &perm)
}

/// Contracts two aligned operands: the dims both have and no later operand needs are summed
/// by `sumproduct_pair` (keeping them as size 1).
fn contract(it: &mut Interpreter<'_>, a: Op, b: Op, plan: &Plan) -> R<Op> {
    let mut counts = plan.dim_counts.clone();
    let mut sum_dims = Vec::new();
    let mut one_sided = false;
    for (dim, count) in counts.iter_mut().enumerate().skip(plan.out_num_dim) {
        if a.shape[dim] != 1 && b.shape[dim] != 1 {
            *count -= 1;
            if *count == 1 {
                sum_dims.push(dim);
                *count = 0;
            }
        } else if *count == 1 && (a.shape[dim] != 1 || b.shape[dim] != 1) {
            one_sided = true;
        }
    }
    if one_sided {
        it.heap.decref(a.v);
        it.heap.decref(b.v);
        return it.unsupported(
            "torch.einsum with a subscript summed out of one operand only (its `sum` before the product)",
        );
    }
    if sum_dims.is_empty() {
        let out = tensor_binary(it, Operator::Mult, a.v, b.v, false);
        it.heap.decref(a.v);
        it.heap.decref(b.v);
        let v = out?;
        let shape = it.tensor_data(v).map(|t| t.shape).unwrap_or_default();
        let strides = Some(row_major_strides(&shape));
        return Ok(Op { v, shape, strides });
    }
    let (mut lro, mut lo, mut ro) = (Vec::new(), Vec::new(), Vec::new());
    let (mut lro_size, mut lo_size, mut ro_size, mut sum_size) = (1i64, 1i64, 1i64, 1i64);
    for i in 0..a.shape.len() {
        let (sl, sr) = (a.shape[i] != 1, b.shape[i] != 1);
        if sum_dims.contains(&i) {
            sum_size *= a.shape[i];
        } else if sl && sr {
            lro.push(i);
            lro_size *= a.shape[i];
        } else if sl {
            lo.push(i);
            lo_size *= a.shape[i];
        } else {
            ro.push(i);
            ro_size *= b.shape[i];
        }
    }
    let mut out_size: Vec<i64> = lro.iter().chain(&lo).map(|&d| a.shape[d]).collect();
    out_size.extend(sum_dims.iter().map(|_| 1));
    out_size.extend(ro.iter().map(|&d| b.shape[d]));
    let lperm: Vec<usize> = [&lro, &lo, &sum_dims, &ro]
        .into_iter()
        .flatten()
        .copied()
        .collect();
    let rperm: Vec<usize> = [&lro, &sum_dims, &ro, &lo]
        .into_iter()
        .flatten()
        .copied()
        .collect();
    let mut operm = vec![0; lperm.len()];
    for (i, &d) in lperm.iter().enumerate() {
        operm[d] = i;
    }
    let left =
        permute(it, a, &lperm).and_then(|l| reshape(it, l, vec![lro_size, lo_size, sum_size]));
    let right =
        permute(it, b, &rperm).and_then(|r| reshape(it, r, vec![lro_size, sum_size, ro_size]));
    let (left, right) = match (left, right) {
        (Ok(l), Ok(r)) => (l, r),
        (l, r) => {
            for o in [&l, &r].into_iter().flatten() {
                it.heap.decref(o.v);
            }
            return Err(l.err().or(r.err()).expect("one failed"));
        }
    };
    let product = bmm(it, &left, &right);
    it.heap.decref(left.v);
    it.heap.decref(right.v);
    let product = view(it, product?, out_size)?;
    permute(it, product, &operm)
}

/// `bmm` of two 3-D operands (autocast's lower-precision list casts them first).
fn bmm(it: &mut Interpreter<'_>, l: &Op, r: &Op) -> R<Op> {
    let cast = it.autocast_inputs(&[l.v, r.v], CastPolicy::LowerPrecision)?;
    let (tl, tr) = (it.tensor_data(cast[0]), it.tensor_data(cast[1]));
    let out = match (&tl, &tr) {
        (Some(a), Some(b)) if a.dtype != b.dtype => it.error(format!(
            "RuntimeError: expected m1 and m2 to have the same dtype, but got: {} != {}",
            a.dtype.name(),
            b.dtype.name()
        )),
        (Some(a), Some(b)) => binary_device(it, &tl, &tr).and_then(|device| {
            let shape = vec![a.shape[0], a.shape[1], b.shape[2]];
            let out = op_output(it, shape, a.dtype, device, &cast)?;
            autograd::record_op(it, out, "bmm", &cast);
            Ok(out)
        }),
        _ => unreachable!("tensors"),
    };
    it.heap.decref_all(cast);
    let v = out?;
    let shape = it.tensor_data(v).map(|t| t.shape).unwrap_or_default();
    let strides = Some(row_major_strides(&shape));
    Ok(Op { v, shape, strides })
}

fn unsqueeze(it: &mut Interpreter<'_>, op: Op, d: usize) -> R<Op> {
    let mut shape = op.shape.clone();
    shape.insert(d, 1);
    let strides = op.strides.as_ref().map(|s| {
        let mut s2 = s.clone();
        s2.insert(d, s.get(d).map_or(1, |&st| st * op.shape[d]));
        s2
    });
    derive(it, op, shape, strides, "unsqueeze")
}

fn permute(it: &mut Interpreter<'_>, op: Op, perm: &[usize]) -> R<Op> {
    let shape = perm.iter().map(|&d| op.shape[d]).collect();
    let strides = op
        .strides
        .as_ref()
        .map(|s| perm.iter().map(|&d| s[d]).collect());
    derive(it, op, shape, strides, "permute")
}

/// `view`: the strides follow when known (the model's views are always viewable here).
fn view(it: &mut Interpreter<'_>, op: Op, shape: Vec<i64>) -> R<Op> {
    let strides = op
        .strides
        .as_ref()
        .and_then(|s| view_strides(&op.shape, s, &shape));
    derive(it, op, shape, strides, "view")
}

/// `reshape`: a view when the strides allow one, else `_unsafe_view(clone(contiguous))`.
fn reshape(it: &mut Interpreter<'_>, op: Op, shape: Vec<i64>) -> R<Op> {
    if let Some(strides) = op
        .strides
        .as_ref()
        .and_then(|s| view_strides(&op.shape, s, &shape))
    {
        return derive(it, op, shape, Some(strides), "view");
    }
    let t = it.tensor_data(op.v).expect("a tensor");
    let src = [op.v];
    let copy = op_output(it, t.shape.clone(), t.dtype, t.device, &src);
    if let Ok(c) = copy {
        autograd::record_op(it, c, "clone", &src);
    }
    it.heap.decref(op.v);
    let copy = copy?;
    let c = it.tensor_data(copy).expect("a tensor");
    let out = it.new_tensor(shape.clone(), t.dtype, t.device, Some((c.storage, None)));
    if let Ok(o) = out {
        autograd::record_op(it, o, "unsafe_view", &[copy]);
    }
    it.heap.decref(copy);
    let strides = Some(row_major_strides(&shape));
    Ok(Op {
        v: out?,
        shape,
        strides,
    })
}

/// A view of `op` made by the view op `row`, its row-major flag set from its strides
/// (unknown strides: not row-major).
fn derive(
    it: &mut Interpreter<'_>,
    op: Op,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    row: &str,
) -> R<Op> {
    let Value::Obj(id) = op.v else {
        unreachable!("a tensor")
    };
    let v = view_by(it, id, shape.clone(), row);
    it.heap.decref(op.v);
    let v = v?;
    let row_major = strides.as_ref().is_some_and(|s| is_row_major(&shape, s));
    if let Value::Obj(vid) = v
        && let ObjKind::Tensor(t) = it.heap.kind_mut(vid)
    {
        t.contiguous = row_major;
    }
    Ok(Op { v, shape, strides })
}

fn row_major_strides(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1].max(1);
    }
    strides
}

/// Row-major as `is_contiguous` judges it: size-1 dims' strides do not matter.
fn is_row_major(shape: &[i64], strides: &[i64]) -> bool {
    let mut expected = 1;
    for (&s, &st) in shape.iter().zip(strides).rev() {
        if s == 0 {
            return true;
        }
        if s != 1 {
            if st != expected {
                return false;
            }
            expected *= s;
        }
    }
    true
}

/// The strides of `new` as a view of (`old`, `strides`), if it can be one: ATen's
/// `computeStride` (`aten/src/ATen/TensorUtils.cpp`): each run of dims contiguous among
/// themselves ("chunk") must map onto whole dims of the new shape.
fn view_strides(old: &[i64], strides: &[i64], new: &[i64]) -> Option<Vec<i64>> {
    if old.is_empty() || old.contains(&0) {
        return Some(row_major_strides(new));
    }
    let mut out = vec![0; new.len()];
    let mut view_d = new.len() as i64 - 1;
    let mut chunk_base = *strides.last().expect("non-empty");
    let (mut tensor_numel, mut view_numel) = (1i64, 1i64);
    for d in (0..old.len()).rev() {
        tensor_numel *= old[d];
        if d == 0 || (old[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base) {
            while view_d >= 0 && (view_numel < tensor_numel || new[view_d as usize] == 1) {
                out[view_d as usize] = view_numel * chunk_base;
                view_numel *= new[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if d > 0 {
                chunk_base = strides[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    (view_d == -1).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_follow_atens_compute_stride() {
        // [2,3,4] row-major to [6,4]: one chunk.
        assert_eq!(
            view_strides(&[2, 3, 4], &[12, 4, 1], &[6, 4]),
            Some(vec![4, 1])
        );
        // A transposed last pair cannot merge with it.
        assert_eq!(view_strides(&[2, 4, 3], &[12, 1, 4], &[8, 3]), None);
        // but the batch dims before it can.
        assert_eq!(
            view_strides(&[2, 5, 4, 3], &[60, 12, 1, 4], &[10, 4, 3]),
            Some(vec![12, 1, 4])
        );
        assert!(is_row_major(&[3, 1, 4], &[4, 99, 1]));
        assert!(!is_row_major(&[4, 3], &[1, 4]));
    }
}
