//! The keyword arguments each modelled torch function, tensor method, class and torch
//! object method accepts. A keyword not listed is refused at the argument's own location:
//! one PyTorch also rejects is its `TypeError`; one PyTorch accepts but the model does not
//! is `unsupported`. So no keyword is silently ignored.
//!
//! Every accepted keyword either changes what it changes in PyTorch (`dtype`, `device`,
//! `requires_grad`, `dim`, `retain_graph`, `create_graph`, `inputs`, `set_to_none`, ...) or
//! is one of `audit::NO_MEMORY_EFFECT`: it changes values the model does not compute. A
//! function or method missing from these tables accepts no keyword: each is refused as
//! unsupported (PyTorch may know it; the model does not).

mod audit;
mod classes;
mod functions;
mod methods;

use super::interp::{Exc, Interpreter, R};
use crate::error::InputErrorKind;
use crate::heap::{Sym, Value};
use audit::KNOWN_UNMODELLED;
pub(super) use classes::for_class;
pub(super) use functions::for_native;
pub(super) use methods::for_tensor_method;

/// Refuses the first keyword of `kwargs` not in `allowed`, at the keyword's own location:
/// with no table (`None`), or for a keyword PyTorch has but the model does not model, as
/// unsupported; otherwise as the `TypeError` Python raises.
pub(super) fn check(
    it: &Interpreter<'_>,
    function: &str,
    allowed: Option<&[&str]>,
    kwargs: &[(Sym, Value)],
) -> R<()> {
    for &(k, _) in kwargs {
        let name = it.names.name(k);
        if allowed.is_some_and(|a| a.contains(&name)) {
            continue;
        }
        let offset = it
            .call_keywords
            .iter()
            .find(|(s, _)| *s == k)
            .map_or(it.offset, |&(_, o)| o);
        let (kind, message) = if allowed.is_none() || KNOWN_UNMODELLED.contains(&name) {
            (
                InputErrorKind::Unsupported,
                format!(
                    "the keyword argument `{name}=` of `{function}` is not supported by the workload model"
                ),
            )
        } else {
            (
                InputErrorKind::Runtime,
                format!("TypeError: {function}() got an unexpected keyword argument '{name}'"),
            )
        };
        return Err(Box::new(Exc::Error {
            kind,
            message,
            offset,
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::audit::{MODELLED, NO_MEMORY_EFFECT};
    use super::*;

    /// Every accepted keyword is either modelled or documented as value-only.
    #[test]
    fn every_accepted_keyword_is_modelled_or_has_no_memory_effect() {
        use super::super::natives::Native;
        let mut tables: Vec<&[&str]> = Vec::new();
        for id in 0..u16::MAX {
            let Some(n) = Native::from_id(crate::heap::NativeId(id)) else {
                break;
            };
            if let Some((_, k)) = for_native(n) {
                tables.push(k);
            }
        }
        for m in [
            "backward",
            "sum",
            "to",
            "cuda",
            "softmax",
            "clamp",
            "add_",
            "normal_",
            "uniform_",
            "copy_",
            "gelu",
            "flatten",
            "transpose",
            "squeeze",
        ] {
            tables.extend(for_tensor_method(m));
        }
        use super::super::torchlib::TorchClass as C;
        for c in [
            C::Linear,
            C::Embedding,
            C::Lstm,
            C::CrossEntropyLoss,
            C::MseLoss,
            C::ReLU,
            C::Sgd,
            C::Adam,
            C::RmsProp,
            C::Adagrad,
            C::LambdaLr,
            C::StepLr,
            C::MultiStepLr,
            C::CosineAnnealingLr,
            C::OneCycleLr,
            C::ReduceLrOnPlateau,
            C::GradScaler,
            C::Rnn,
            C::MultiheadAttention,
            C::TransformerEncoderLayer,
            C::TransformerEncoder,
            C::ParameterList,
            C::ParameterDict,
            C::ExponentialLr,
            C::LinearLr,
            C::ConstantLr,
            C::MultiplicativeLr,
            C::SequentialLr,
            C::ChainedScheduler,
            C::CyclicLr,
            C::PolynomialLr,
            C::CosineAnnealingWarmRestarts,
            C::KlDivLoss,
            C::Softplus,
            C::GroupNorm,
            C::LeakyRelu,
            C::Silu,
            C::Elu,
            C::Hardtanh,
            C::Relu6,
            C::Gelu,
            C::Tanh,
            C::Sigmoid,
            C::Mish,
            C::Hardswish,
            C::Softmax,
            C::Unflatten,
            C::DataLoader,
            C::Subset,
            C::LstmCell,
            C::RnnCell,
        ] {
            tables.push(for_class(c));
        }
        for k in tables.into_iter().flatten() {
            assert!(
                MODELLED.contains(k) || NO_MEMORY_EFFECT.contains(k),
                "keyword {k} is accepted but neither modelled nor documented"
            );
            assert!(
                !KNOWN_UNMODELLED.contains(k),
                "{k} is both accepted and unmodelled"
            );
        }
    }
}
