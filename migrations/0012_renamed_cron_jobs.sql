-- The cron tasks prune_sessions and expire_holds are now prune_auth and expire_ledger (they prune login
-- attempts too, and expire leases as well as holds). A run the old names queued would never be picked up
-- again: remove it by its job key. On a fresh database graphile-worker's schema comes after this migration.
DO $$
BEGIN
  IF to_regprocedure('graphile_worker.remove_job(text)') IS NOT NULL THEN
    PERFORM graphile_worker.remove_job('prune_sessions');
    PERFORM graphile_worker.remove_job('expire_holds');
  END IF;
END $$;
