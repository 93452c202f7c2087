//! Shape rules of the tensor operations the workload model supports.

/// Number of elements; an empty shape is a scalar with one element. Saturates instead of
/// wrapping: sizes that overflow are refused by [`storage_nbytes`] before any tensor exists.
pub fn numel(shape: &[i64]) -> u64 {
    shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d.max(0) as u64))
        .unwrap_or(u64::MAX)
}

/// Bytes of a contiguous storage for `shape`, with PyTorch's checks
/// (`computeStorageNbytesContiguous`): a negative dimension, or a product of sizes and
/// element size that overflows or exceeds the largest `int64`, is the error PyTorch raises.
pub fn storage_nbytes(shape: &[i64], element_size: u64) -> Result<u64, String> {
    if let Some(&d) = shape.iter().find(|&&d| d < 0) {
        return Err(format!(
            "RuntimeError: Trying to create tensor with negative dimension {d}: {shape:?}"
        ));
    }
    let overflowed =
        || format!("RuntimeError: Storage size calculation overflowed with sizes={shape:?}");
    // Checked at every step, as `safe_multiply_u64` does: an overflow before a zero-sized
    // dimension still counts.
    let mut bytes = element_size;
    for &d in shape {
        bytes = bytes.checked_mul(d as u64).ok_or_else(overflowed)?;
    }
    if bytes > i64::MAX as u64 {
        return Err(overflowed());
    }
    Ok(bytes)
}

/// NumPy-style broadcasting of two shapes (elementwise ops).
pub fn broadcast(a: &[i64], b: &[i64]) -> Result<Vec<i64>, String> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i < n - a.len() {
            1
        } else {
            a[i - (n - a.len())]
        };
        let db = if i < n - b.len() {
            1
        } else {
            b[i - (n - b.len())]
        };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(format!(
                    "The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton dimension {i}"
                ));
            }
        };
    }
    Ok(out)
}

/// PyTorch's message for a matrix product whose inner sizes differ, with sizes written as
/// PyTorch writes them (`4x512`).
pub fn mat_mismatch(mat1: &[i64], mat2: &[i64]) -> String {
    let dims = |s: &[i64]| {
        s.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("x")
    };
    format!(
        "mat1 and mat2 shapes cannot be multiplied ({} and {})",
        dims(mat1),
        dims(mat2)
    )
}

/// `torch.matmul` shapes: vector/matrix cases and batched matrices with broadcast batch dims.
pub fn matmul_shape(a: &[i64], b: &[i64]) -> Result<Vec<i64>, String> {
    let mismatch = || Err(mat_mismatch(a, b));
    match (a.len(), b.len()) {
        (0, _) | (_, 0) => Err("both arguments to matmul need to be at least 1D".into()),
        (1, 1) => {
            if a[0] == b[0] {
                Ok(vec![])
            } else {
                mismatch()
            }
        }
        (2, 1) => {
            if a[1] == b[0] {
                Ok(vec![a[0]])
            } else {
                mismatch()
            }
        }
        (1, 2) => {
            if a[0] == b[0] {
                Ok(vec![b[1]])
            } else {
                mismatch()
            }
        }
        _ => {
            let (a2, a_vec) = if a.len() == 1 {
                (vec![1, a[0]], true)
            } else {
                (a.to_vec(), false)
            };
            let (b2, b_vec) = if b.len() == 1 {
                (vec![b[0], 1], true)
            } else {
                (b.to_vec(), false)
            };
            let (m, k1) = (a2[a2.len() - 2], a2[a2.len() - 1]);
            let (k2, n) = (b2[b2.len() - 2], b2[b2.len() - 1]);
            if k1 != k2 {
                return mismatch();
            }
            let mut out = broadcast(&a2[..a2.len() - 2], &b2[..b2.len() - 2])?;
            if !a_vec {
                out.push(m);
            }
            if !b_vec {
                out.push(n);
            }
            Ok(out)
        }
    }
}

/// `view`/`reshape` target shape, resolving one `-1`.
pub fn reshape_shape(from: &[i64], to: &[i64]) -> Result<Vec<i64>, String> {
    let total = numel(from);
    // The inferred (`-1`) dimension, found without collecting the positions.
    let inferred = to.iter().position(|&d| d == -1);
    if inferred.is_some_and(|i| to[i + 1..].contains(&-1)) {
        return Err("only one dimension can be inferred".into());
    }
    if to.iter().any(|&d| d < -1) {
        return Err(format!("invalid shape dimension in {to:?}"));
    }
    let known: u64 = to.iter().filter(|&&d| d != -1).map(|&d| d as u64).product();
    let mut out = to.to_vec();
    if let Some(i) = inferred {
        if known == 0 || !total.is_multiple_of(known) {
            return Err(format!(
                "shape '{to:?}' is invalid for input of size {total}"
            ));
        }
        out[i] = (total / known) as i64;
    } else if known != total {
        return Err(format!(
            "shape '{to:?}' is invalid for input of size {total}"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_sizes_are_checked() {
        assert_eq!(storage_nbytes(&[2, 3], 4), Ok(24));
        assert_eq!(storage_nbytes(&[], 8), Ok(8));
        assert_eq!(storage_nbytes(&[0, 5], 4), Ok(0));
        assert!(storage_nbytes(&[1 << 32, 1 << 32], 4).is_err());
        assert!(storage_nbytes(&[1 << 62], 4).is_err());
        assert!(storage_nbytes(&[1 << 61], 4).is_err());
        assert_eq!(storage_nbytes(&[1 << 60], 4), Ok(1 << 62));
        assert!(storage_nbytes(&[2; 70], 1).is_err());
        assert!(
            storage_nbytes(&[3, -1], 4)
                .unwrap_err()
                .contains("negative dimension -1: [3, -1]")
        );
        assert_eq!(numel(&[1 << 40, 1 << 40]), u64::MAX);
    }

    #[test]
    fn broadcasting() {
        assert_eq!(broadcast(&[4, 1], &[3]).unwrap(), vec![4, 3]);
        assert_eq!(broadcast(&[], &[2, 2]).unwrap(), vec![2, 2]);
        assert!(broadcast(&[4], &[3]).is_err());
    }

    #[test]
    fn matmul_shapes() {
        assert_eq!(matmul_shape(&[8, 16], &[16, 4]).unwrap(), vec![8, 4]);
        assert_eq!(matmul_shape(&[2, 8, 16], &[16, 4]).unwrap(), vec![2, 8, 4]);
        assert_eq!(matmul_shape(&[16], &[16, 4]).unwrap(), vec![4]);
        assert_eq!(matmul_shape(&[16], &[16]).unwrap(), Vec::<i64>::new());
        assert!(matmul_shape(&[8, 15], &[16, 4]).is_err());
    }

    #[test]
    fn reshape_infers_one_dimension() {
        assert_eq!(reshape_shape(&[16], &[-1, 4]).unwrap(), vec![4, 4]);
        assert!(reshape_shape(&[16], &[-1, 5]).is_err());
        assert!(reshape_shape(&[16], &[-1, -1]).is_err());
        assert!(reshape_shape(&[16], &[3, 5]).is_err());
    }
}
