"""Task definitions for the trainer: losses as (numerator, denominator) terms and metrics."""
