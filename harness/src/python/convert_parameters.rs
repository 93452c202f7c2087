//! `torch.nn.utils.parameters_to_vector(parameters)` and `vector_to_parameters(vec,
//! parameters)`, run as `torch/nn/utils/convert_parameters.py` runs them.
//!
//! `parameters_to_vector` takes `param.view(-1)` of each parameter (a view: no bytes, a
//! `ViewBackward0` under grad mode), gathers them in a list, and returns `torch.cat` of the
//! list: one new tensor of all the elements (`CatBackward0`, saving sizes only), whose
//! graph reaches every parameter. The list and the views go when it returns.
//!
//! `vector_to_parameters` slices `vec` per parameter (`vec[p:p + n]`, a view), views the
//! slice as the parameter (`view_as`) and assigns its `.data`: each parameter then aliases
//! `vec`'s storage, so `vec`'s bytes live as long as any parameter does, and each
//! parameter's old storage is released (freed unless something else, e.g. a saved tensor
//! or an optimizer state, still holds it). Both check that the parameters share one device
//! (`_check_param_device`'s `TypeError`).

use super::interp::{Interpreter, R};
use super::natives::{Args, Native, call_method, native_value, set_tensor_attr, tensor_attr, view};
use crate::heap::{ObjKind, Value};
use crate::torch::DeviceKind;

impl Interpreter<'_> {
    /// `parameters_to_vector(parameters)`.
    pub(super) fn parameters_to_vector(&mut self, a: &Args) -> R<Value> {
        let Some(params) = a.kw(self, "parameters").or(a.pos.first().copied()) else {
            return self.error(
                "TypeError: parameters_to_vector() missing 1 required positional argument: 'parameters'",
            );
        };
        let params = self.collect_items(params)?;
        let r = self.views_of(&params);
        self.heap.decref_all(params);
        let views = r?;
        let list = Value::Obj(self.alloc(ObjKind::List(views)));
        self.call(native_value(Native::Cat), vec![list], Vec::new())
    }

    /// `param.view(-1)` of each parameter, checking their devices as it goes.
    fn views_of(&mut self, params: &[Value]) -> R<Vec<Value>> {
        let mut device = None;
        let mut views = Vec::with_capacity(params.len());
        let view_name = self.sym("view");
        for &p in params {
            let r = self
                .check_param_device(p, &mut device)
                .and_then(|()| call_method(self, p, view_name, vec![Value::Int(-1)], Vec::new()));
            match r {
                Ok(v) => views.push(v),
                Err(e) => {
                    self.heap.decref_all(views);
                    return Err(e);
                }
            }
        }
        Ok(views)
    }

    /// `vector_to_parameters(vec, parameters)`.
    pub(super) fn vector_to_parameters(&mut self, a: &Args) -> R<Value> {
        let vec = a.kw(self, "vec").or(a.pos.first().copied());
        let params = a.kw(self, "parameters").or(a.pos.get(1).copied());
        let (Some(vec), Some(params)) = (vec, params) else {
            return self.error(
                "TypeError: vector_to_parameters() missing required positional arguments: 'vec' and 'parameters'",
            );
        };
        let Some(v) = self.tensor_data(vec) else {
            return self.error(format!(
                "TypeError: expected torch.Tensor, but got: {}",
                self.type_name_of(vec)
            ));
        };
        let Value::Obj(vec_id) = vec else {
            unreachable!("a tensor")
        };
        let params = self.collect_items(params)?;
        let mut device = None;
        let mut pointer = 0i64;
        let mut result = Ok(Value::None);
        let data = self.sym("data");
        for &p in &params {
            if let Err(e) = self.check_param_device(p, &mut device) {
                result = Err(e);
                break;
            }
            let Some(t) = self.tensor_data(p) else { break };
            let n = t.numel() as i64;
            // The slice `vec[pointer:pointer + n]`, clipped at the end as Python slices are.
            let len = v.shape.first().copied().unwrap_or(1);
            let got = (len - pointer).clamp(0, n);
            let r = view(self, vec_id, vec![got]).and_then(|slice| {
                let shaped = if got == n {
                    let Value::Obj(s) = slice else {
                        unreachable!("a tensor")
                    };
                    view(self, s, t.shape.clone())
                } else {
                    let dims: Vec<String> = t.shape.iter().map(i64::to_string).collect();
                    self.error(format!(
                        "RuntimeError: shape '[{}]' is invalid for input of size {got}",
                        dims.join(", ")
                    ))
                };
                self.heap.decref(slice);
                shaped
            });
            let r = r.and_then(|shaped| {
                let Value::Obj(s) = shaped else {
                    unreachable!("a tensor")
                };
                let detached = tensor_attr(self, s, data);
                self.heap.decref(shaped);
                let detached = detached?;
                let Value::Obj(p_id) = p else {
                    unreachable!("a tensor")
                };
                let stored = set_tensor_attr(self, p_id, data, detached);
                self.heap.decref(detached);
                stored
            });
            if let Err(e) = r {
                result = Err(e);
                break;
            }
            pointer += n;
        }
        self.heap.decref_all(params);
        result
    }

    /// `_check_param_device`: every parameter on the first one's device.
    fn check_param_device(&self, p: Value, device: &mut Option<DeviceKind>) -> R<()> {
        let Some(t) = self.tensor_data(p) else {
            return self.error(format!(
                "AttributeError: '{}' object has no attribute 'is_cuda'",
                self.type_name_of(p)
            ));
        };
        match device {
            None => *device = Some(t.device),
            Some(d) if *d != t.device => {
                return self.error(
                    "TypeError: Found two parameters on different devices, this is currently not supported.",
                );
            }
            Some(_) => {}
        }
        Ok(())
    }
}
