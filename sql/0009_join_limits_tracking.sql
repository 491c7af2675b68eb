-- Change tracking of the feed join limits added by revision 0009 (run by migration 0009; do not edit
-- once released). The function is sql/0007_join_tracking.sql's track_feeds with two more columns in
-- the feed's own comparison: max_join_pairs and max_join_result_bytes bound what the feed's own join
-- subscriptions receive in an hour, a plan carries them, and no other feed's plan reads them.

CREATE OR REPLACE FUNCTION feedrouter.track_feeds() RETURNS trigger
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
DECLARE
    stream_module CONSTANT text := 'urn:feedrouter:stream:1';
    changed text[];
    readers boolean;  -- a feed that joins may read changed
    joining boolean;  -- a feed with join subscriptions changed
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- a new feed has no subscriptions yet
        SELECT coalesce(array_agg(n.name), '{}'), coalesce(bool_or(n.event_time_path IS NOT NULL), false), false
        INTO changed, readers, joining
        FROM new_rows n;
    ELSIF TG_OP = 'DELETE' THEN
        -- its subscriptions go by cascade, and their trigger bumps the event-time feeds
        SELECT coalesce(array_agg(o.name), '{}'), coalesce(bool_or(o.event_time_path IS NOT NULL), false), false
        INTO changed, readers, joining
        FROM old_rows o;
    ELSE
        changed := ARRAY(
            SELECT unnest(ARRAY[o.name, n.name])
            FROM old_rows o
            FULL JOIN new_rows n ON n.id = o.id
            WHERE o.id IS NULL OR n.id IS NULL
               OR (o.name, o.input_prefix, o.layout, o.record_element, o.quarantine_prefix, o.dtd_id, o.active,
                   o.max_result_bytes, o.max_document_result_bytes, o.invalid_documents,
                   o.event_time_path, o.event_time_format, o.max_join_window, o.allowed_lateness,
                   o.max_join_pairs, o.max_join_result_bytes)
                  IS DISTINCT FROM
                  (n.name, n.input_prefix, n.layout, n.record_element, n.quarantine_prefix, n.dtd_id, n.active,
                   n.max_result_bytes, n.max_document_result_bytes, n.invalid_documents,
                   n.event_time_path, n.event_time_format, n.max_join_window, n.allowed_lateness,
                   n.max_join_pairs, n.max_join_result_bytes));
        SELECT coalesce(bool_or(o.event_time_path IS NOT NULL OR n.event_time_path IS NOT NULL), false),
               coalesce(bool_or(EXISTS (
                   SELECT FROM feedrouter.subscriptions s
                   WHERE s.feed_id IN (o.id, n.id) AND s.active AND strpos(s.query, stream_module) > 0)), false)
        INTO readers, joining
        FROM old_rows o
        FULL JOIN new_rows n ON n.id = o.id
        WHERE o.id IS NULL OR n.id IS NULL
           OR (o.name, o.active, o.event_time_path, o.event_time_format, o.max_join_window, o.allowed_lateness)
              IS DISTINCT FROM
              (n.name, n.active, n.event_time_path, n.event_time_format, n.max_join_window, n.allowed_lateness);
    END IF;
    IF readers THEN
        changed := changed || ARRAY(
            SELECT f.name FROM feedrouter.feeds f
            WHERE EXISTS (
                SELECT FROM feedrouter.subscriptions s
                WHERE s.feed_id = f.id AND s.active AND strpos(s.query, stream_module) > 0));
    END IF;
    IF joining THEN
        changed := changed || ARRAY(SELECT f.name FROM feedrouter.feeds f WHERE f.event_time_path IS NOT NULL);
    END IF;
    -- One call, so bump_catalog_versions locks all the rows in its one sorted order.
    PERFORM feedrouter.bump_catalog_versions(changed);
    RETURN NULL;
END;
$$;
