"""Datalog over RDF: SRL / RDFox rule parsing, well-formedness, stratification,
semi-naive materialization, incremental maintenance (DRed) and explanation.

Pipeline (each stage imports only the ones before it)::

    model -> diagnostics -> srl / dlog (parse) -> wellformed -> stratify
          -> expr -> evaluate (semi-naive) -> maintain (DRed) -> explain
"""
