//! Secrets masked at the source of user SQL. Masking a query's output cannot stop a query
//! language: `upper(text)`, `reverse(text)`, `encode(text, 'hex')`, a letter glued before a
//! key or one character per row each return a secret the output's masker no longer
//! recognizes. So user SQL never reads the stored text: each table is a view
//! ([`masked_table`]) whose text columns are masked (`pond_mask`) as they are scanned, and
//! every function, filter, join and error sees only placeholders. [`mask_array`] also masks
//! what a query builds from literals, inside lists, structs, maps, dictionaries and bytes.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, FixedSizeListArray, LargeBinaryArray,
    LargeListArray, LargeStringArray, ListArray, MapArray, StringArray, StringViewArray,
    StructArray,
};
use arrow_schema::DataType;
use datafusion::catalog::default_table_source::provider_as_source;
use datafusion::catalog::view::ViewTable;
use datafusion::catalog::TableProvider;
use datafusion::common::{Column, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlanBuilder, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};

/// Text columns a view leaves bare: identifiers the clients write and names from closed
/// sets pond writes. No secret has their shape, and a filter on one (`WHERE session_id =
/// …`) still reaches the scan and its index.
const BARE: [&str; 10] = [
    "id",
    "session_id",
    "message_id",
    "parent_session_id",
    "call_id",
    "role",
    "source_agent",
    "origin",
    "part_type",
    "record_type",
];

/// `provider` as user SQL reads it under `name`: a view that masks every text column but
/// the [`BARE`] ones as it is scanned. The provider itself is registered nowhere, so no
/// query can name it.
pub fn masked_table(
    name: &str,
    provider: Arc<dyn TableProvider>,
) -> datafusion::common::Result<Arc<dyn TableProvider>> {
    let schema = provider.schema();
    let columns = schema.fields().iter().map(|f| {
        let column = Expr::Column(Column::new(Some(name), f.name()));
        let text = matches!(
            f.data_type(),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        );
        if text && !BARE.contains(&f.name().as_str()) {
            MASK.call(vec![column]).alias(f.name())
        } else {
            column
        }
    });
    let plan = LogicalPlanBuilder::scan(name, provider_as_source(provider), None)?
        .project(columns)?
        .build()?;
    Ok(Arc::new(ViewTable::new(plan, None)))
}

static MASK: LazyLock<ScalarUDF> = LazyLock::new(|| ScalarUDF::new_from_impl(MaskText::new()));

/// `pond_mask(text)`: the text with every secret replaced by its placeholder.
#[derive(Debug, PartialEq, Eq, Hash)]
struct MaskText {
    signature: Signature,
}

impl MaskText {
    fn new() -> MaskText {
        MaskText {
            signature: Signature::uniform(
                1,
                vec![DataType::Utf8, DataType::LargeUtf8, DataType::Utf8View],
                Volatility::Immutable,
            ),
        }
    }
}

impl ScalarUDFImpl for MaskText {
    fn name(&self) -> &str {
        "pond_mask"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> datafusion::common::Result<DataType> {
        Ok(arg_types[0].clone())
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::common::Result<ColumnarValue> {
        Ok(match &args.args[0] {
            ColumnarValue::Array(a) => ColumnarValue::Array(mask_array(a)),
            ColumnarValue::Scalar(s) => ColumnarValue::Scalar(match s {
                ScalarValue::Utf8(v) => ScalarValue::Utf8(masked(v)),
                ScalarValue::LargeUtf8(v) => ScalarValue::LargeUtf8(masked(v)),
                ScalarValue::Utf8View(v) => ScalarValue::Utf8View(masked(v)),
                other => other.clone(),
            }),
        })
    }
}

fn masked(v: &Option<String>) -> Option<String> {
    v.as_deref().map(|t| pond_mask::mask(t).into_owned())
}

/// `a` with every secret in its text masked, of the same type: strings, the UTF-8 of byte
/// strings, and the text inside lists, structs, maps and dictionaries. `a` itself (not a
/// copy) when nothing in it was masked.
pub fn mask_array(a: &ArrayRef) -> ArrayRef {
    let masked: Option<ArrayRef> = match a.data_type() {
        DataType::Utf8 => texts(a.as_string::<i32>().iter())
            .map(|v| Arc::new(StringArray::from_iter(v)) as ArrayRef),
        DataType::LargeUtf8 => texts(a.as_string::<i64>().iter())
            .map(|v| Arc::new(LargeStringArray::from_iter(v)) as ArrayRef),
        DataType::Utf8View => texts(a.as_string_view().iter())
            .map(|v| Arc::new(StringViewArray::from_iter(v)) as ArrayRef),
        DataType::Binary => bytes(a.as_binary::<i32>().iter())
            .map(|v| Arc::new(BinaryArray::from_iter(v)) as ArrayRef),
        DataType::LargeBinary => bytes(a.as_binary::<i64>().iter())
            .map(|v| Arc::new(LargeBinaryArray::from_iter(v)) as ArrayRef),
        DataType::BinaryView => bytes(a.as_binary_view().iter())
            .map(|v| Arc::new(BinaryViewArray::from_iter(v)) as ArrayRef),
        DataType::List(field) => {
            let l = a.as_list::<i32>();
            changed(l.values()).map(|values| {
                Arc::new(ListArray::new(
                    field.clone(),
                    l.offsets().clone(),
                    values,
                    l.nulls().cloned(),
                )) as ArrayRef
            })
        }
        DataType::LargeList(field) => {
            let l = a.as_list::<i64>();
            changed(l.values()).map(|values| {
                Arc::new(LargeListArray::new(
                    field.clone(),
                    l.offsets().clone(),
                    values,
                    l.nulls().cloned(),
                )) as ArrayRef
            })
        }
        DataType::FixedSizeList(field, size) => {
            let l = a.as_fixed_size_list();
            changed(l.values()).map(|values| {
                Arc::new(FixedSizeListArray::new(
                    field.clone(),
                    *size,
                    values,
                    l.nulls().cloned(),
                )) as ArrayRef
            })
        }
        DataType::Struct(fields) => {
            let s = a.as_struct();
            let columns: Vec<ArrayRef> = s.columns().iter().map(mask_array).collect();
            let any = columns
                .iter()
                .zip(s.columns())
                .any(|(m, c)| !Arc::ptr_eq(m, c));
            any.then(|| {
                Arc::new(StructArray::new(
                    fields.clone(),
                    columns,
                    s.nulls().cloned(),
                )) as ArrayRef
            })
        }
        DataType::Map(field, sorted) => {
            let m = a.as_map();
            let entries: ArrayRef = Arc::new(m.entries().clone());
            changed(&entries).map(|entries| {
                Arc::new(MapArray::new(
                    field.clone(),
                    m.offsets().clone(),
                    entries.as_struct().clone(),
                    m.nulls().cloned(),
                    *sorted,
                )) as ArrayRef
            })
        }
        DataType::Dictionary(_, _) => {
            let d = a.as_any_dictionary();
            changed(d.values()).map(|values| d.with_values(values))
        }
        _ => None,
    };
    masked.unwrap_or_else(|| a.clone())
}

/// `a` masked, if masking changed it.
fn changed(a: &ArrayRef) -> Option<ArrayRef> {
    let m = mask_array(a);
    (!Arc::ptr_eq(&m, a)).then_some(m)
}

/// The cells masked, if any of them held a secret.
fn texts<'a>(cells: impl Iterator<Item = Option<&'a str>>) -> Option<Vec<Option<Cow<'a, str>>>> {
    let cells: Vec<Option<Cow<str>>> = cells.map(|c| c.map(pond_mask::mask)).collect();
    cells
        .iter()
        .any(|c| matches!(c, Some(Cow::Owned(_))))
        .then_some(cells)
}

/// The byte cells that are UTF-8 masked as text (others kept), if any of them held a secret.
fn bytes<'a>(cells: impl Iterator<Item = Option<&'a [u8]>>) -> Option<Vec<Option<Cow<'a, [u8]>>>> {
    let cells: Vec<Option<Cow<[u8]>>> = cells
        .map(|c| {
            c.map(|b| match std::str::from_utf8(b).map(pond_mask::mask) {
                Ok(Cow::Owned(t)) => Cow::Owned(t.into_bytes()),
                _ => Cow::Borrowed(b),
            })
        })
        .collect();
    cells
        .iter()
        .any(|c| matches!(c, Some(Cow::Owned(_))))
        .then_some(cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::{ListBuilder, StringBuilder, StringDictionaryBuilder};
    use arrow_array::types::Int32Type;

    const KEY: &str = "ghp_sMehGAkWvj7FAc9QeWJKY40uvSwMFLZDe1f8";

    fn shown(a: &ArrayRef) -> String {
        arrow_cast::pretty::pretty_format_columns("c", std::slice::from_ref(a))
            .unwrap()
            .to_string()
    }

    #[test]
    fn text_inside_lists_structs_dictionaries_and_bytes_is_masked() {
        let text = format!("token\n{KEY}");
        let mut list = ListBuilder::new(StringBuilder::new());
        list.values().append_value(&text);
        list.append(true);
        let list: ArrayRef = Arc::new(list.finish());
        let mut dict = StringDictionaryBuilder::<Int32Type>::new();
        dict.append_value(&text);
        let dict: ArrayRef = Arc::new(dict.finish());
        let strings: ArrayRef = Arc::new(StringArray::from(vec![text.as_str()]));
        let structs: ArrayRef = Arc::new(StructArray::from(vec![(
            Arc::new(arrow_schema::Field::new("a", DataType::Utf8, false)),
            strings.clone(),
        )]));
        let binary: ArrayRef = Arc::new(BinaryArray::from_iter_values([text.as_bytes()]));
        for a in [strings, list, dict, structs, binary] {
            assert!(shown(&a).contains("e1f8") || a.data_type() == &DataType::Binary);
            let m = mask_array(&a);
            assert_eq!(m.data_type(), a.data_type());
            let out = shown(&m);
            assert!(!out.contains(&KEY[..20]), "{out}");
            let hex: String = KEY[..12].bytes().map(|b| format!("{b:02x}")).collect();
            assert!(!out.contains(&hex), "{out}");
        }
        let clean: ArrayRef = Arc::new(StringArray::from(vec!["nothing here"]));
        assert!(Arc::ptr_eq(&mask_array(&clean), &clean));
    }
}
