package badgerkv

// KeptOut is keptOut: how much of a table's mapping the hand-back advises.
var KeptOut = keptOut
