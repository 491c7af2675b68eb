-- Undo sql/0007_join_tracking.sql: track_subscriptions and track_subscribers as
-- sql/0002_change_tracking.sql made them, and
-- track_feeds as sql/0006_feed_event_time_tracking.sql made it (run by migration 0007's downgrade).

-- subscriptions: the feeds of the inserted, deleted or meaningfully updated rows (old and new feed
-- when a subscription moves).
CREATE OR REPLACE FUNCTION feedrouter.track_subscriptions() RETURNS trigger
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM feedrouter.bump_catalog_versions(ARRAY(
            SELECT f.name FROM new_rows n JOIN feedrouter.feeds f ON f.id = n.feed_id));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM feedrouter.bump_catalog_versions(ARRAY(
            SELECT f.name FROM old_rows o JOIN feedrouter.feeds f ON f.id = o.feed_id));
    ELSE
        PERFORM feedrouter.bump_catalog_versions(ARRAY(
            SELECT f.name
            FROM old_rows o
            FULL JOIN new_rows n ON n.id = o.id
            JOIN feedrouter.feeds f ON f.id = o.feed_id OR f.id = n.feed_id
            WHERE o.id IS NULL OR n.id IS NULL
               OR (o.subscriber_id, o.feed_id, o.name, o.query, o.active)
                  IS DISTINCT FROM (n.subscriber_id, n.feed_id, n.name, n.query, n.active)));
    END IF;
    RETURN NULL;
END;
$$;

-- feeds: the feed itself (both names when it is renamed).
-- Revision 0006 added the event-time path and format and the join bounds, which decide the joins a
-- plan accepts and the history its join stage reads: a change to them is a catalog change.
-- spark_conf (0005) still is not: it changes how batches run, not the plan.
CREATE OR REPLACE FUNCTION feedrouter.track_feeds() RETURNS trigger
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM feedrouter.bump_catalog_versions(ARRAY(SELECT n.name FROM new_rows n));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM feedrouter.bump_catalog_versions(ARRAY(SELECT o.name FROM old_rows o));
    ELSE
        PERFORM feedrouter.bump_catalog_versions(ARRAY(
            SELECT unnest(ARRAY[o.name, n.name])
            FROM old_rows o
            FULL JOIN new_rows n ON n.id = o.id
            WHERE o.id IS NULL OR n.id IS NULL
               OR (o.name, o.input_prefix, o.layout, o.record_element, o.quarantine_prefix, o.dtd_id, o.active,
                   o.max_result_bytes, o.max_document_result_bytes, o.invalid_documents,
                   o.event_time_path, o.event_time_format, o.max_join_window, o.allowed_lateness)
                  IS DISTINCT FROM
                  (n.name, n.input_prefix, n.layout, n.record_element, n.quarantine_prefix, n.dtd_id, n.active,
                   n.max_result_bytes, n.max_document_result_bytes, n.invalid_documents,
                   n.event_time_path, n.event_time_format, n.max_join_window, n.allowed_lateness)));
    END IF;
    RETURN NULL;
END;
$$;

-- subscribers: every feed one of their subscriptions is on.
CREATE OR REPLACE FUNCTION feedrouter.track_subscribers() RETURNS trigger
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        RETURN NULL;  -- a new subscriber has no subscription yet
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM feedrouter.bump_catalog_versions(ARRAY(
            SELECT f.name FROM old_rows o
            JOIN feedrouter.subscriptions s ON s.subscriber_id = o.id
            JOIN feedrouter.feeds f ON f.id = s.feed_id));
    ELSE
        PERFORM feedrouter.bump_catalog_versions(ARRAY(
            SELECT f.name
            FROM old_rows o
            FULL JOIN new_rows n ON n.id = o.id
            JOIN feedrouter.subscriptions s ON s.subscriber_id = o.id OR s.subscriber_id = n.id
            JOIN feedrouter.feeds f ON f.id = s.feed_id
            WHERE o.id IS NULL OR n.id IS NULL
               OR (o.name, o.output_prefix, o.active) IS DISTINCT FROM (n.name, n.output_prefix, n.active)));
    END IF;
    RETURN NULL;
END;
$$;
