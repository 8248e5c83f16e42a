"""Stream.class_names(): a dataset's class names in label order, asked of
the daemon page by page (CLASSES frames), against oracles worked out here:
torchvision's ImageFolder(root).classes for image folders (the fixtures,
one class per image; make-demo's; 3000 class folders of 60-character
names, which take three 64 KiB pages; names beyond ASCII and one that is
no UTF-8 at all), a list's or TSV's labels sorted ("0".."max" for numbered
labels), [] for npy. On streams that never ask for a batch (as
bfeed.torch describes a dataset), after a reconnect, over two daemons."""
import hashlib
import os

import pytest
import torchvision
from PIL import Image

import bfeed
from conftest import _binary
from oracle_util import Daemon

ON_DEMAND = dict(select="on-demand", batch=1, size=16)  # builds nothing


def names(addr, dataset, **opts):
    with bfeed.connect(addr) as c, c.stream(dataset, **dict(ON_DEMAND, **opts)) as s:
        got = s.class_names()
        assert s.classes == len(got) or got == []
        return got


def tiny_png(path):
    Image.new("RGB", (2, 2), (200, 30, 90)).save(path, format="PNG")


def class_folders(root, classes):
    """An image folder: one tiny PNG in each class folder (str or bytes names)."""
    broot = os.fsencode(root)
    for name in classes:
        d = os.path.join(broot, os.fsencode(name))
        os.makedirs(d)
        tiny_png(os.path.join(d, b"a.png"))
    return root


def test_image_folders(daemon, data):
    for name, root in [("fx", os.path.join(data["tmp"], "fx")), ("demo", os.path.join(data["tmp"], "demo", "train"))]:
        want = torchvision.datasets.ImageFolder(root).classes
        assert len(want) > 1
        assert names(daemon.addr, name) == want


def test_text_labels_and_npy(daemon, data):
    path = next(d.split(":", 1)[1].split(",")[0] for d in data["datasets"] if d.startswith("txt="))
    with open(path, encoding="utf-8") as f:
        labels = {line.split("\t", 1)[0] for line in f if line.strip()}
    assert names(daemon.addr, "txt") == sorted(labels)
    assert names(daemon.addr, "npy") == []


def test_after_batches_and_not_on_demand(daemon, data):
    """A stream that reads, asked between batches: the same names."""
    want = torchvision.datasets.ImageFolder(os.path.join(data["tmp"], "demo", "train")).classes
    with bfeed.connect(daemon.addr) as c, c.stream("demo", batch=4, size=16, seed=2) as s:
        next(s)
        assert s.class_names() == want
        next(s)


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """A daemon of this module's own: many long class names, names beyond
    ASCII, and lists with named and numbered labels."""
    tmp = str(tmp_path_factory.mktemp("classes"))
    many = [hashlib.sha256(b"%d" % i).hexdigest()[:60] for i in range(3000)]
    class_folders(os.path.join(tmp, "many"), many)
    # UTF-8 beyond ASCII, and a Latin-1 byte that is no UTF-8: ImageFolder
    # reads that as os.fsdecode does (a surrogate escape), and so must we.
    class_folders(os.path.join(tmp, "intl"), ["Zebra", "apple", "caf\u00e9", "\u65e5\u672c", "\u03a9mega",
                                              b"caf\xe9", "with space"])
    images = os.path.join(tmp, "img")
    os.makedirs(images)
    rows = [("zebra crossing", 3), ("cat", 2), ("\u00c4pfel", 1), ("dog", 2), ("Cat", 1)]
    named, numbered = [], []
    for k, (label, copies) in enumerate(rows):
        for j in range(copies):
            p = os.path.join(images, "%d_%d.png" % (k, j))
            tiny_png(p)
            named.append("%s\t%s\n" % (p, label))
            numbered.append("%s %d\n" % (p, (k * 3) % 7))
    for name, lines in [("named.txt", named), ("numbered.txt", numbered)]:
        with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
            f.write("# a comment line\n" + "".join(lines))
    d = Daemon(_binary("BFEEDD"), tmp, ["many=" + os.path.join(tmp, "many"), "intl=" + os.path.join(tmp, "intl"),
                                        "named=list:" + os.path.join(tmp, "named.txt"),
                                        "numbered=list:" + os.path.join(tmp, "numbered.txt")], workers=1)
    yield {"tmp": tmp, "daemon": d, "labels": [r[0] for r in rows], "numbers": [(k * 3) % 7 for k in range(5)]}
    d.kill()


def test_many_long_names_take_pages(own):
    root = os.path.join(own["tmp"], "many")
    want = torchvision.datasets.ImageFolder(root).classes
    assert len(want) == 3000 and sum(2 + len(n) for n in want) > 2 * 65536  # three CLASSES frames at least
    assert names(own["daemon"].addr, "many") == want


def test_names_beyond_ascii(own):
    want = torchvision.datasets.ImageFolder(os.path.join(own["tmp"], "intl")).classes
    assert "caf\udce9" in want and "\u65e5\u672c" in want
    assert names(own["daemon"].addr, "intl") == want


def test_list_labels(own):
    """Named labels: the distinct ones in byte order (sorted str of valid
    UTF-8); numbered ones: "0".."max", as PROTOCOL.md's rule counts them."""
    assert names(own["daemon"].addr, "named") == sorted(set(own["labels"]))
    assert names(own["daemon"].addr, "numbered") == [str(i) for i in range(max(own["numbers"]) + 1)]


def test_after_reconnect(data, own_daemon, tmp_path):
    """The names again after the daemon died and came back: asked anew on
    the new connection (kill -9 between two calls)."""
    want = torchvision.datasets.ImageFolder(os.path.join(data["tmp"], "fx")).classes
    d = own_daemon
    with bfeed.connect(d.addr) as c, c.stream("fx", **ON_DEMAND) as s:
        assert s.class_names() == want
        d.kill()
        d = Daemon(_binary("BFEEDD"), str(tmp_path), data["datasets"])  # the same socket
        try:
            assert s.class_names() == want
            assert c.reconnects == 1
        finally:
            d.kill()


def test_over_two_daemons(data, two_daemons):
    want = torchvision.datasets.ImageFolder(os.path.join(data["tmp"], "demo", "train")).classes
    addr = ",".join(d.addr for d in two_daemons)
    with bfeed.connect(addr) as c, c.stream("demo", batch=4, size=16) as s:
        assert s.class_names() == want
        next(s)
    assert names(addr, "npy") == []


def test_closed_stream(daemon):
    with bfeed.connect(daemon.addr) as c:
        s = c.stream("fx", **ON_DEMAND)
        s.close()
        with pytest.raises(ValueError, match="closed"):
            s.class_names()
