-- The first hour of a feed's stream (run by migration 0010; do not edit once released).
--
-- A join stage waits for the witnesses of every hour its window reaches, of every feed its joins
-- read; an hour from before a feed's stream is never routed, so it must not be waited for. The
-- route DAG routes the feeds active when a run starts: a feed added (or made active again) while
-- feedrouter already routes is routed from the hour it was added on, not before. This trigger
-- records that hour in feeds.stream_start, unless the row gives one, and only once the ledger has
-- a batch (before that, on a first deployment, catch-up routes the feeds from the route start,
-- FEEDROUTER_ROUTE_START, which NULL means).
CREATE FUNCTION feedrouter.start_feed_stream() RETURNS trigger
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
DECLARE
    this_hour timestamptz := date_trunc('hour', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
BEGIN
    IF NOT EXISTS (SELECT FROM feedrouter.batches) THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NEW.stream_start IS NULL AND NEW.active THEN
            NEW.stream_start := this_hour;
        END IF;
    ELSIF NEW.active AND NOT OLD.active AND NEW.stream_start IS NOT DISTINCT FROM OLD.stream_start THEN
        -- active again: the hours it was inactive were not routed
        NEW.stream_start := this_hour;
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER start_feed_stream BEFORE INSERT OR UPDATE OF active ON feedrouter.feeds
    FOR EACH ROW EXECUTE FUNCTION feedrouter.start_feed_stream();
