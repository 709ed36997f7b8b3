"""TFRecord framing with google-crc32c's checksums: the same bytes as tensorboardX's
pure-Python writer, and TensorBoard's own reader takes the file."""

import importlib
import struct
import sys

import pytest
from tensorboard.backend.event_processing import event_file_loader
from tensorboardX import crc32c as reference_crc
from tensorboardX import record_writer as reference_writer
from tensorboardX.proto import event_pb2

from causal_disent.utils import record_file


@pytest.mark.parametrize("data", [b"", b"a", bytes(range(256)), b"\xff" * 1000,
                                  struct.pack("<Q", 123456)])
def test_checksums_and_framing_are_those_of_the_pure_python_reference(data):
    assert record_file._crc32c(data) == reference_crc._crc32c(data)
    assert record_file.masked_crc32c(data) == reference_writer.masked_crc32c(data)
    framed = record_file.framed(data)
    assert len(framed) == 16 + len(data)
    assert struct.unpack("<Q", framed[:8])[0] == len(data)
    assert framed[8:12] == struct.pack("<I", reference_writer.masked_crc32c(framed[:8]))
    assert framed[12:-4] == data
    assert framed[-4:] == struct.pack("<I", reference_writer.masked_crc32c(data))


def test_tensorboards_reader_takes_the_files_records(tmp_path):
    path = tmp_path / "events.out.tfevents.0.host"
    records = record_file.RecordFile(path)
    written = [event_pb2.Event(wall_time=1.0, step=step, file_version="brain.Event:2")
               for step in range(3)]
    for event in written:
        records.write(event.SerializeToString())
    records.close()
    records.close()  # closing twice does nothing
    read = list(event_file_loader.EventFileLoader(str(path)).Load())
    assert [event.step for event in read] == [0, 1, 2]
    # The reader checks the sums: a wrong one loses its record.
    damaged = bytearray(path.read_bytes())
    damaged[-1] ^= 1
    path.write_bytes(bytes(damaged))
    read = list(event_file_loader.EventFileLoader(str(path)).Load())
    assert [event.step for event in read] == [0, 1]


def test_without_google_crc32c_the_pure_python_sums_serve(monkeypatch):
    """A GPU image assembled from carried wheels may lack it: the sums stay right."""
    expected = record_file.framed(b"event")  # google-crc32c's sums
    monkeypatch.setitem(sys.modules, "google_crc32c", None)  # import raises ImportError
    importlib.reload(record_file)
    try:
        assert record_file._crc32c is reference_crc.crc32c
        assert record_file.framed(b"event") == expected
    finally:
        monkeypatch.undo()
        importlib.reload(record_file)
    assert record_file._crc32c is not reference_crc.crc32c  # google-crc32c's again
