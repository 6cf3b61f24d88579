"""Binding: parsed SELECT / DELETE -> typed, resolved trees against the catalog; the bound
expression IR (`expressions`), bound relations (`relations`) and FROM-clause table
functions."""
