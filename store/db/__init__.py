"""The one database boundary: engines, transactions, the fault table, tables, settings.

Terms:
    engine, transaction: SQLAlchemy 2 over SQLite (embedded default) or PostgreSQL
        (:mod:`.engine`); every write runs in :meth:`~.engine.Database.run_transaction`,
        retried on contention.
    fault: what a driver exception means to evstore (:mod:`.faults`).
    tables: the schema the Alembic revisions create (:mod:`.tables`).
    point read: a one-statement read on a per-thread driver connection (:mod:`.rawread`).
    stored setting: a row of the settings table (:mod:`.settings`).

Imports :mod:`evstore.core` and :mod:`evstore.tlog`, and SQLAlchemy; nothing above.
"""
