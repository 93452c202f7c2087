//! The metric shape several reports share (torchmetrics' list states): a class whose
//! `preds` and `target` lists keep what each update appends, built once here.

/// Python source of a class `class` with list states `preds` and `target`, appended to by the
/// method `update` (`"update"` or `"__call__"`) as `preds{keep}` (`keep` = `""` keeps the
/// tensor itself, `".clone()"` a copy), followed by `methods` (indented as class members).
pub fn list_state_metric(class: &str, update: &str, keep: &str, methods: &str) -> String {
    format!(
        "class {class}:
    def __init__(self):
        self.preds = []
        self.target = []

    def {update}(self, preds, target):
        self.preds.append(preds{keep})
        self.target.append(target{keep})
{methods}
"
    )
}
