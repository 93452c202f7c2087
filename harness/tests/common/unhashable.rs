//! CPython's `TypeError` for an unhashable dict key, as the Python helper `msg(outer, inner)`
//! the dict-key tests (`vm_object_keys.rs`, `vm_dict_value_keys.rs`) assert with.
#![allow(dead_code)] // not every test binary that includes `common` checks dict keys

/// From 3.14 CPython names the key's type and the unhashable one inside it.
const MSG: &str = "import sys
def msg(outer, inner):
    if sys.version_info >= (3, 14):
        return \"cannot use '%s' as a dict key (unhashable type: '%s')\" % (outer, inner)
    return \"unhashable type: '%s'\" % inner
";

/// `script` after the `msg` helper.
pub fn with_msg(script: &str) -> String {
    format!("{MSG}{script}")
}
