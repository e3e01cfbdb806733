"""What every glyph family's generation shares: the split parameters (:mod:`.params`, one
frozen record written into ``split.json``) and the puzzle sheet painter (:mod:`.sheet`). The
families themselves live in :mod:`studio.families` (the glyph progressive matrices in
:mod:`studio.families.glyph_pmp`); the vetting, in :mod:`studio.vet`, never imports this
package."""
