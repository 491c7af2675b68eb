-- Change tracking of join subscriptions (issue 16; run by migration 0007; do not edit once released).
--
-- A join subscription (its query imports the stream module, urn:feedrouter:stream:1) is compiled
-- into more than its own feed's plan: each side of the join is a block in the plan of the feed it
-- reads, and its own feed's build checks it against the event-time settings of the feeds it reads.
-- So a feed's plan depends on rows of other feeds, and these two functions bump those feeds too.
-- Which feeds a join reads only the XQuery parser can tell; a join can read only feeds with an
-- event time (event_time_path IS NOT NULL), so the rules below bump all of those: conservative (a
-- needless rebuild at worst), and join subscriptions change rarely. The module URI is a frozen copy
-- of feedrouter.lang.ast.STREAM_MODULE.

-- subscriptions: the feeds of the inserted, deleted or meaningfully updated rows (old and new feed
-- when a subscription moves), as in revision 0002; and every event-time feed when one of those rows,
-- before or after the change, is a join subscription.
CREATE OR REPLACE FUNCTION feedrouter.track_subscriptions() RETURNS trigger
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
DECLARE
    stream_module CONSTANT text := 'urn:feedrouter:stream:1';
    changed text[];
    joins boolean;
BEGIN
    -- LEFT JOIN: when a feed is deleted, its subscriptions go by cascade after it; they are no
    -- feed's to bump (NULL names are skipped), but a join among them still changes other plans.
    IF TG_OP = 'INSERT' THEN
        SELECT coalesce(array_agg(f.name), '{}'), coalesce(bool_or(strpos(n.query, stream_module) > 0), false)
        INTO changed, joins
        FROM new_rows n LEFT JOIN feedrouter.feeds f ON f.id = n.feed_id;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT coalesce(array_agg(f.name), '{}'), coalesce(bool_or(strpos(o.query, stream_module) > 0), false)
        INTO changed, joins
        FROM old_rows o LEFT JOIN feedrouter.feeds f ON f.id = o.feed_id;
    ELSE
        SELECT coalesce(array_agg(f.name), '{}'),
               coalesce(bool_or(strpos(o.query, stream_module) > 0 OR strpos(n.query, stream_module) > 0), false)
        INTO changed, joins
        FROM old_rows o
        FULL JOIN new_rows n ON n.id = o.id
        LEFT JOIN feedrouter.feeds f ON f.id = o.feed_id OR f.id = n.feed_id
        WHERE o.id IS NULL OR n.id IS NULL
           OR (o.subscriber_id, o.feed_id, o.name, o.query, o.active)
              IS DISTINCT FROM (n.subscriber_id, n.feed_id, n.name, n.query, n.active);
    END IF;
    IF joins THEN
        changed := changed || ARRAY(SELECT f.name FROM feedrouter.feeds f WHERE f.event_time_path IS NOT NULL);
    END IF;
    -- One call, so bump_catalog_versions locks all the rows in its one sorted order.
    PERFORM feedrouter.bump_catalog_versions(changed);
    RETURN NULL;
END;
$$;

-- feeds: the feed itself (both names when it is renamed), for the columns of revision 0006; and, when
-- a feed's join-facing columns (its name, whether it is active, its event-time settings) change, or an
-- event-time feed comes or goes:
-- * on a feed that has or had an event time: every feed with an active join subscription, whose
--   build reads the event-time feeds (it refuses joins on a feed without one, or with a window past
--   its max_join_window) and may read this one;
-- * on a feed with an active join subscription: every event-time feed, whose plan may hold that
--   subscription's blocks (only joins of active feeds are compiled into other feeds' plans).
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
                   o.event_time_path, o.event_time_format, o.max_join_window, o.allowed_lateness)
                  IS DISTINCT FROM
                  (n.name, n.input_prefix, n.layout, n.record_element, n.quarantine_prefix, n.dtd_id, n.active,
                   n.max_result_bytes, n.max_document_result_bytes, n.invalid_documents,
                   n.event_time_path, n.event_time_format, n.max_join_window, n.allowed_lateness));
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

-- subscribers: every feed one of their subscriptions is on, as in revision 0002; and every event-time
-- feed when one of their subscriptions is a join (the feeds its blocks read have it in their plans,
-- and only an active subscriber's joins are compiled).
CREATE OR REPLACE FUNCTION feedrouter.track_subscribers() RETURNS trigger
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
DECLARE
    stream_module CONSTANT text := 'urn:feedrouter:stream:1';
    changed text[];
    joins boolean;
BEGIN
    IF TG_OP = 'INSERT' THEN
        RETURN NULL;  -- a new subscriber has no subscription yet
    ELSIF TG_OP = 'DELETE' THEN
        -- the subscriptions go by cascade after the subscriber: read them from the old rows' ids
        SELECT coalesce(array_agg(f.name), '{}'), coalesce(bool_or(strpos(s.query, stream_module) > 0), false)
        INTO changed, joins
        FROM old_rows o
        JOIN feedrouter.subscriptions s ON s.subscriber_id = o.id
        JOIN feedrouter.feeds f ON f.id = s.feed_id;
    ELSE
        SELECT coalesce(array_agg(f.name), '{}'), coalesce(bool_or(strpos(s.query, stream_module) > 0), false)
        INTO changed, joins
        FROM old_rows o
        FULL JOIN new_rows n ON n.id = o.id
        JOIN feedrouter.subscriptions s ON s.subscriber_id = o.id OR s.subscriber_id = n.id
        JOIN feedrouter.feeds f ON f.id = s.feed_id
        WHERE o.id IS NULL OR n.id IS NULL
           OR (o.name, o.output_prefix, o.active) IS DISTINCT FROM (n.name, n.output_prefix, n.active);
    END IF;
    IF joins THEN
        changed := changed || ARRAY(SELECT f.name FROM feedrouter.feeds f WHERE f.event_time_path IS NOT NULL);
    END IF;
    PERFORM feedrouter.bump_catalog_versions(changed);
    RETURN NULL;
END;
$$;
