"""Pilot studies with people (issue 29): a plan of who sees which puzzle, an experiment that
runs from disk in a browser (jsPsych) or in PsychoPy, and its results read back per puzzle."""
