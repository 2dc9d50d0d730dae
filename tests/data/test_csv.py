"""nf.data.csv: options, streaming, sources and errors (the TF.js comparisons are in test_csv_fixtures.py)."""

from __future__ import annotations

import asyncio
import io

import pytest

from ndflow.data.byte_sources import FileDataSource
from ndflow.data.csv import ColumnNames, CSVDataset, csv
from ndflow.data.csv_parse import js_number, split_row
from ndflow.data.dataset import Dataset
from ndflow.data.lazy_iterator import LazyIterator
from ndflow.data.text_lines import TextLineDataset

BOSTON = b"crim,rm,medv\n0.1,6.5,24\n0.2,7.1,21.6\n"


class CountingReader(io.RawIOBase):
    """A binary stream that records how many bytes were asked for and handed out."""

    def __init__(self, data: bytes, seekable: bool = True) -> None:
        self._buf = io.BytesIO(data)
        self._seekable = seekable
        self.handed_out = 0
        self.largest_read = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._seekable

    def tell(self) -> int:
        return self._buf.tell()

    def seek(self, pos: int, whence: int = 0) -> int:
        if not self._seekable:
            raise io.UnsupportedOperation("seek")
        return self._buf.seek(pos, whence)

    def read(self, n: int = -1) -> bytes:
        self.largest_read = max(self.largest_read, n)
        chunk = self._buf.read(n)
        self.handed_out += len(chunk)
        return chunk


def test_is_a_dataset_of_unknown_size():
    ds = csv(BOSTON)
    assert isinstance(ds, CSVDataset) and isinstance(ds, Dataset)
    assert ds.size is None
    with pytest.raises(TypeError, match="unknown size"):
        len(ds)
    it = ds.iterator()
    assert isinstance(it, LazyIterator)
    r = it.next()
    assert r.value == {"crim": 0.1, "rm": 6.5, "medv": 24.0} and not r.done
    it.close()
    assert it.next().done


def test_camel_case_dict_and_keywords_agree():
    by_dict = list(csv(BOSTON, {"hasHeader": True, "columnConfigs": {"medv": {"isLabel": True}}}))
    by_keywords = list(csv(BOSTON, column_configs={"medv": {"is_label": True}}))
    by_snake_dict = list(csv(BOSTON, {"column_configs": {"medv": {"is_label": True}}}))
    assert by_dict == by_keywords == by_snake_dict
    assert by_dict[0] == {"xs": {"crim": 0.1, "rm": 6.5}, "ys": {"medv": 24.0}}


def test_config_dict_and_keywords_together_are_refused():
    with pytest.raises(TypeError, match="either as a config dict or as keywords"):
        csv(BOSTON, {"hasHeader": True}, delimiter=";")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"column_configs": {"a": {"dtype": "float64"}}}, ValueError, "dtype must be one of"),
        ({"column_configs": {"a": {"islabel": True}}}, ValueError, "unknown column_configs\\['a'\\] key 'islabel'"),
        ({"column_configs": {"a": {"required": "yes"}}}, TypeError, "required must be True or False"),
        ({"column_configs": {"a": 3}}, TypeError, "must be a dict"),
        ({"column_names": "abc"}, TypeError, "column_names must be a list of str"),
        ({"delimiter": "::"}, ValueError, "delimiter must be one character"),
        ({"delimiter": '"'}, ValueError, "delimiter must be one character"),
        ({"delim_whitespace": True, "delimiter": ","}, ValueError, "must not be given when delim_whitespace"),
        ({"configured_columns_only": True}, ValueError, "needs column_configs"),
        ({"has_header": 1}, TypeError, "has_header must be True or False"),
    ],
)
def test_bad_options_are_refused_at_once(kwargs, error, match):
    with pytest.raises(error, match=match):
        csv(BOSTON, **kwargs)


def test_unknown_camel_case_key_is_refused():
    with pytest.raises(ValueError, match="unknown CSV config key 'header'"):
        csv(BOSTON, {"header": True})


def test_column_names_is_a_list_and_awaitable():
    ds = csv(BOSTON, column_configs={"rm": {}, "crim": {}}, configured_columns_only=True)
    names = ds.column_names()
    assert isinstance(names, ColumnNames) and names == ["rm", "crim"]

    async def main():
        return await ds.column_names(), [x async for x in ds]

    awaited, rows = asyncio.run(main())
    assert awaited == ["rm", "crim"]
    assert rows == [{"crim": 0.1, "rm": 6.5}, {"crim": 0.2, "rm": 7.1}]


def test_async_next_and_await_iterator():
    async def main():
        it = await csv(BOSTON).iterator()
        first = await it.next()
        return first.value, first.done

    assert asyncio.run(main()) == ({"crim": 0.1, "rm": 6.5, "medv": 24.0}, False)


def test_value_types():
    data = b"n,i,b,s,e\n3,2.9,TRUE,7,\nx,-0.5,0,y,\n"
    ds = csv(data, column_configs={"i": {"dtype": "int32"}, "b": {"dtype": "bool"}, "e": {"default": "z"}})
    first, second = list(ds)
    assert first == {"n": 3.0, "i": 2, "b": 1, "s": 7.0, "e": "z"}
    assert type(first["n"]) is float and type(first["i"]) is int and type(first["b"]) is int
    assert second == {"n": "x", "i": -1, "b": 0, "s": "y", "e": "z"}


def test_js_number_rules():
    assert js_number(" 12\n") == 12.0 and js_number("0x1f") == 31.0 and js_number("") == 0.0
    assert js_number("1e999") == float("inf") and js_number("-Infinity") == float("-inf")
    for text in ("NaN", "inf", "infinity", "1_0", "0x", "-0x1", "1e", ".", "1.2.3", "１２"):
        assert js_number(text) is None, text


def test_split_row_rules():
    assert split_row('"a,b",c', ",", False) == ["a,b", "c"]
    assert split_row('"a""b",c', ",", False) == ['a""b', "c"]
    assert split_row("  a  b ", " ", True) == ["a", "b", ""]
    assert split_row(' "a b"  c', " ", True) == ["a b", "c"]
    assert split_row("a,,", ",", False) == ["a", "", ""]


def test_streams_a_large_file_in_chunks(tmp_path):
    rows = 100_000
    path = tmp_path / "big.csv"
    with open(path, "w") as f:
        f.write("x,y,label\n")
        for i in range(rows):
            f.write(f"{i},{i * 0.25},{i % 3}\n")
    size = path.stat().st_size
    reader = CountingReader(path.read_bytes())
    ds = csv(reader, column_configs={"label": {"is_label": True, "dtype": "int32"}})
    it = ds.iterator()
    first = next(it)
    assert first == {"xs": {"x": 0.0, "y": 0.0}, "ys": {"label": 0}}
    # Header (one chunk) and the first row (one more): a small part of the 2 MB file.
    assert reader.handed_out <= 2 * 64 * 1024 < size // 10
    assert reader.largest_read <= 64 * 1024
    count, last = 1, first
    for row in it:
        count, last = count + 1, row
    assert count == rows and last == {"xs": {"x": rows - 1.0, "y": (rows - 1) * 0.25}, "ys": {"label": (rows - 1) % 3}}
    # From a path too, and again: the dataset re-reads the file.
    assert sum(1 for _ in csv(path)) == rows


def test_one_pass_stream_reads_once():
    reader = CountingReader(BOSTON, seekable=False)
    ds = csv(reader)
    assert ds.column_names() == ["crim", "rm", "medv"]
    assert [r["medv"] for r in ds] == [24.0, 21.6]
    with pytest.raises(ValueError, match="cannot be seeked, so it can be read only once"):
        ds.iterator()


def test_seekable_file_like_is_read_from_where_it_stood():
    f = io.BytesIO(b"junk\n" + BOSTON)
    f.readline()
    ds = csv(f)
    assert len(list(ds)) == 2 and len(list(ds)) == 2


def test_text_mode_file_like():
    assert list(csv(io.StringIO("a;b\n1;é\n"), delimiter=";")) == [{"a": 1.0, "b": "é"}]


def test_byte_order_mark_is_dropped():
    assert csv(b"\xef\xbb\xbfa,b\n1,2\n").column_names() == ["a", "b"]


def test_not_utf8_names_source_and_offset():
    with pytest.raises(ValueError, match=r"nf.data.csv: <bytes> is not UTF-8 text \(invalid byte at offset 8\)"):
        list(csv(b"a,b\n1,2\n\xff\xfe,3\n"))
    with pytest.raises(ValueError, match="not UTF-8"):
        list(csv(b"a,b\n1,\xe2\x82"))  # a character cut off at the end


def test_missing_file_names_it(tmp_path):
    missing = tmp_path / "nope.csv"
    ds = csv(missing)  # lazy, as TF.js: nothing is read yet
    with pytest.raises(FileNotFoundError, match="nf.data.csv: no such file: .*nope.csv"):
        ds.column_names()
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        list(csv("file://" + str(missing)))


def test_file_url_with_escaped_space(tmp_path):
    path = tmp_path / "a b.csv"
    path.write_bytes(BOSTON)
    assert len(list(csv(path.as_uri()))) == 2


def test_bad_source_type():
    with pytest.raises(TypeError, match="nf.data.csv: the source must be a path.*got int"):
        csv(3)


def test_error_row_closes_the_file(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"a,b\n1,2\n3\n4,5\n")
    it = csv(path).iterator()
    assert next(it) == {"a": 1.0, "b": 2.0}
    with pytest.raises(ValueError, match=r"bad.csv', line 3: should have 2 elements .* got 1: '3'"):
        next(it)
    assert it.next().done  # closed after the error
    assert it._lines._chunks._closed


def test_long_line_is_shortened_in_errors():
    line = "x" * 1000
    with pytest.raises(ValueError) as info:
        list(csv(b"a,b\n" + line.encode() + b"\n"))
    assert len(str(info.value)) < 400 and "..." in str(info.value)


def test_no_header_and_column_names():
    ds = csv(b"1,2\n3,4", has_header=False, column_names=["p", "q"])
    assert list(ds) == [{"p": 1.0, "q": 2.0}, {"p": 3.0, "q": 4.0}]


def test_text_line_dataset_and_file_data_source():
    ds = TextLineDataset(FileDataSource(b"one\r\ntwo\n\nthree", chunk_size=2))
    assert ds.size is None
    assert list(ds) == ["one", "two", "", "three"]
    it = ds.iterator()
    next(it), next(it)
    assert it.line_number == 2
    with pytest.raises(ValueError, match="chunk_size must be a positive int"):
        FileDataSource(b"", chunk_size=0)


def test_batches_into_tensors_without_leaks():
    import ndflow as nf

    ds = csv(BOSTON, {"columnConfigs": {"medv": {"isLabel": True}}})
    if not hasattr(ds, "batch"):
        pytest.skip("Dataset.batch is not there yet")
    (batch,) = list(ds.batch(2))
    try:
        assert tuple(batch["xs"]["rm"].shape) == (2,) and batch["xs"]["rm"].dtype == "float32"
        assert batch["ys"]["medv"].array_sync() == pytest.approx([24.0, 21.6])
    finally:
        nf.dispose(batch)


def test_closing_early_closes_the_file(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes(BOSTON)
    with csv(path).iterator() as it:
        next(it)
    assert it._lines._chunks._closed and it.next().done


def test_unsupported_url_scheme():
    with pytest.raises(ValueError, match="nf.data.csv: unsupported URL scheme 's3'"):
        csv("s3://bucket/data.csv")
