"""nbkit.rdf: the command's g(r) bit for bit from an MDAnalysis universe, and InterRDF's counts."""
import warnings

import numpy as np
import pytest

import nbkit

mda = pytest.importorskip("MDAnalysis")
warnings.filterwarnings("ignore")


@pytest.fixture(scope="module")
def universe(data_dir):
    return mda.Universe(str(data_dir / "1a63.pqr"), str(data_dir / "1a63-wobble.dcd"))


@pytest.mark.parametrize("norm", ["rdf", "vmd"])
def test_rdf_equals_the_commands_csv(universe, data_dir, cli, tmp_path, norm):
    out = tmp_path / "g.csv"
    cli("rdf", data_dir / "1a63.pqr", data_dir / "1a63-wobble.dcd", "--select-a", "name CA", "--select-b", "name CB",
        "--rmax", "12", "--bins", "48", "--first", "2", "--stride", "3", "--backend", "cpu", "--norm", norm, "-o", out,
        "-q")
    table = np.loadtxt(out, delimiter=",", skiprows=4)
    r = nbkit.rdf(universe.select_atoms("name CA"), universe.select_atoms("name CB"), rmax=12, bins=48, first=2,
                  stride=3, backend="cpu", norm=norm)
    assert r.frames == 6
    np.testing.assert_array_equal(r.counts, table[:, 3].astype(np.uint64))
    np.testing.assert_array_equal(r.rdf, table[:, 4])  # the CSV's shortest round-trip decimals
    np.testing.assert_array_equal(r.coordination, table[:, 5])


def edge_pairs(universe, a, b, rmin, rmax, bins, step):
    """Pairs within 1e-6 A of a bin edge (MDAnalysis's float64 distances): InterRDF's float32 grid
    search may bin those on the other side (tests/clients/check_rdf_mdanalysis.py)."""
    from MDAnalysis.lib.distances import distance_array
    near = 0
    width = (rmax - rmin) / bins
    for ts in universe.trajectory[::step]:
        d = distance_array(a.positions, b.positions, box=ts.dimensions)
        np.fill_diagonal(d, np.inf)  # (1, 1) blocks: each atom's own pair
        d = d[(d >= rmin) & (d <= rmax)]
        scaled = (d - rmin) / width
        near += int(np.sum(np.abs(scaled - np.round(scaled)) * width < 1e-6))
    return near


@pytest.mark.parametrize("names, rmin, rmax, bins, step", [(("N", "O"), 0.0, 15.0, 60, 1), (("CA", "CA"), 2.0, 14.0, 30, 4)])
def test_rdf_counts_equal_interrdf(universe, names, rmin, rmax, bins, step):
    from MDAnalysis.analysis.rdf import InterRDF
    a, b = (universe.select_atoms(f"name {n}") for n in names)
    # InterRDF's (1, 1) blocks are residues where each residue has one atom of each group, in
    # order: 1a63's last residue has no atom named O (its carboxylate's are O1, O2), so it is
    # left out of A (InterRDF would subtract a pair that does not exist from its normalisation).
    a = a[a.resindices < b.resindices.max() + 1] if len(a) != len(b) else a
    assert len(a) == len(b) and np.array_equal(a.resindices, b.resindices)
    theirs = InterRDF(a, b, nbins=bins, range=(rmin, rmax), exclusion_block=(1, 1)).run(step=step)
    ours = nbkit.rdf(a, b, rmin=rmin, rmax=rmax, bins=bins, stride=step, exclude="residue")
    off = int(np.abs(ours.counts.astype(np.int64) - theirs.results.count.astype(np.int64)).sum())
    assert off <= 2 * edge_pairs(universe, a, b, rmin, rmax, bins, step)
    agree = ours.counts == theirs.results.count
    np.testing.assert_allclose(ours.rdf[agree], theirs.results.rdf[agree], rtol=1e-12, atol=0)


def test_rdf_refuses_what_would_be_wrong(universe):
    ca = universe.select_atoms("name CA")
    with pytest.raises(TypeError):
        nbkit.rdf(ca.positions)
    with pytest.raises(ValueError, match="over half the narrowest width"):
        nbkit.rdf(ca, rmax=30)  # the cell is 50 A
    with pytest.raises(ValueError, match="exclude"):
        nbkit.rdf(ca, exclude="chain")
    with pytest.raises(ValueError, match="bonds"):
        nbkit.rdf(ca, exclude="molecule")  # a PQR has no bonds
    with pytest.raises(TypeError, match="unknown|keyword"):
        nbkit.rdf(ca, bogus=1)
