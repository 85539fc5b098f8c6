"""Objectives for the trainer: each kind's loss as (numerator, denominator) terms, and its
training metrics (interface: base.Objective)."""
