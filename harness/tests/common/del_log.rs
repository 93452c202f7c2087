//! The script the VM's evaluation-order tests share (`vm_expressions*.rs`,
//! `vm_simple_statements.rs`): a list `log`, a class `T` whose instances log their death
//! (and their birth, when asked), and `mark`, which logs a name and returns its value.
//! Included by path (`#[path = "common/del_log.rs"]`), without the collector helpers.

/// `log`, the class `T` with `methods` (class-body lines indented by four, placed before
/// `__del__`) and `mark`. `births`: `T('a')` also logs `'new a'` when it is made.
pub fn del_log(births: bool, methods: &str) -> String {
    let birth = if births {
        "\n        log.append('new ' + name)"
    } else {
        ""
    };
    format!(
        "
log = []
class T:
    def __init__(self, name):
        self.name = name{birth}
{methods}    def __del__(self):
        log.append('del ' + self.name)
def mark(name, value):
    log.append(name)
    return value
"
    )
}
